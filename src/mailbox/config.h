/* The mailbox's share of cr_config: its COURIER_* variables and range checks.
 * src/courier.c composes them with the modules' into the public
 * cr_config_from_env and cr_config_validate. Not installed. */
#ifndef COURIER_MAILBOX_CONFIG_H
#define COURIER_MAILBOX_CONFIG_H

#include "courier/mailbox.h"

/* As cr_config_from_env and cr_config_validate, for the mailbox's own fields. */
int cr_mailbox_config_from_env(cr_config *cfg, char *err, size_t errlen);
int cr_mailbox_config_validate(const cr_config *cfg, char *err, size_t errlen);

/* A COURIER_* name the library reads (true), and the known one nearest to `name`
 * by edit distance. Pure. */
bool cr_config_is_known_variable(const char *name);
const char *cr_config_nearest_variable(const char *name);
/* One warning line on `out` for every COURIER_* variable in the environment that the
 * library does not read, naming the nearest known one. Local. */
void cr_config_warn_unknown(FILE *out);
/* One warning line on `out` if cr_config_from_env raised a COURIER_BUFFER_CAP below
 * the buffer size to it, and `cfg` (the configuration in use) still has it so. Local. */
void cr_config_warn_raised(FILE *out, const cr_config *cfg);

#endif
