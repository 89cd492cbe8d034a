/* The sparse exchange's share of cr_config: COURIER_EXCHANGE and the range of the
 * exchange field (src/courier.c composes the public cr_config_from_env and
 * cr_config_validate). Not installed. */
#ifndef COURIER_NBX_EXCHANGE_INTERNAL_H
#define COURIER_NBX_EXCHANGE_INTERNAL_H

#include "courier/mailbox.h"

int cr_exchange_config_from_env(cr_config *cfg, char *err, size_t errlen);
int cr_exchange_config_validate(const cr_config *cfg, char *err, size_t errlen);

#endif
