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

/* uselocale is per thread, so other threads keep theirs. */
locale_t cr_numbers_c_begin(void)
{
    pthread_once(&c_locale_once, make_c_locale);
    return c_locale ? uselocale(c_locale) : (locale_t)0;
}

void cr_numbers_c_end(locale_t previous)
{
    if (previous)
        uselocale(previous);
}

double cr_strtod_c(const char *s, char **end)
{
    locale_t previous = cr_numbers_c_begin();
    double v = strtod(s, end);
    cr_numbers_c_end(previous);
    return v;
}
