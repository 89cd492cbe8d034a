#include "common/number.h"

#include <locale.h>
#include <pthread.h>
#include <stdlib.h>

static locale_t c_locale;
static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;

static void make_c_locale(void)
{
    c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
}

/* The calling thread in the "C" locale until the matching leave_c (uselocale is
 * per thread, so other threads keep theirs). (locale_t)0: could not switch, and
 * the program's locale applies. */
static locale_t enter_c(void)
{
    pthread_once(&c_locale_once, make_c_locale);
    return c_locale ? uselocale(c_locale) : (locale_t)0;
}

static void leave_c(locale_t previous)
{
    if (previous)
        uselocale(previous);
}

double cr_strtod_c(const char *s, char **end)
{
    locale_t previous = enter_c();
    double v = strtod(s, end);
    leave_c(previous);
    return v;
}

float cr_strtof_c(const char *s, char **end)
{
    locale_t previous = enter_c();
    float v = strtof(s, end);
    leave_c(previous);
    return v;
}
