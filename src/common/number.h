/* Numbers in text read the same whatever locale the program chose: '.' is the
 * decimal point of settings, cost files and edge weights, even in a program that
 * set a locale whose decimal point is ','. Not installed. */
#ifndef COURIER_COMMON_NUMBER_H
#define COURIER_COMMON_NUMBER_H

#include <locale.h>

/* strtod in the "C" locale (this thread only, for the call). */
double cr_strtod_c(const char *s, char **end);

/* The calling thread in the "C" locale until cr_numbers_c_end(previous): once around
 * a parse of many numbers rather than per number. (locale_t)0: could not switch. */
locale_t cr_numbers_c_begin(void);
void cr_numbers_c_end(locale_t previous);

#endif
