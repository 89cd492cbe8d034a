/* Numbers in text read the same whatever locale the program chose: '.' is the
 * decimal point of settings, cost files and edge weights, even in a program that
 * set a locale whose decimal point is ','. Not installed. */
#ifndef COURIER_COMMON_NUMBER_H
#define COURIER_COMMON_NUMBER_H

/* strtod and strtof in the "C" locale (this thread only, for the call). */
double cr_strtod_c(const char *s, char **end);
float cr_strtof_c(const char *s, char **end);

#endif
