/* <courier.h> as a user's program includes it, compiled with -std=c11 -Wpedantic on top
 * of the build's -Wall -Wextra -Werror (tests/meson.build): a public header that needs a
 * GNU extension without saying so fails the build. Running it checks one inline
 * function of the headers. */
#include <courier.h>

int main(void)
{
    return cr_rng_bounded(cr_rng_hash64(1), 10) < 10 ? 0 : 1;
}
