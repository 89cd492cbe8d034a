/* Numbers in settings and files read alike in every locale: a program that set a
 * locale whose decimal point is ',' still has COURIER_FLUSH_INTERVAL=0.005 and an
 * edge weight of 1.5 read as written. The locale is built with localedef into a
 * temporary directory (LOCPATH); where that cannot be done, the test is skipped. */
#include "courier/graph.h"
#include "courier/mailbox.h"
#include "mailbox/config.h"

#include <locale.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static char dir[] = "/tmp/courier-locale-XXXXXX";

/* A locale whose decimal point is ',' for LC_NUMERIC; false if none can be had. */
static bool comma_locale(void)
{
    if (!mkdtemp(dir))
        return false;
    char cmd[256];
    snprintf(cmd, sizeof cmd, "localedef -i de_DE -f UTF-8 %s/de_DE.UTF-8 >/dev/null 2>&1",
             dir);
    if (system(cmd) != 0)
        return false;
    setenv("LOCPATH", dir, 1);
    if (!setlocale(LC_NUMERIC, "de_DE.UTF-8"))
        return false;
    return strtod("0.5", NULL) != 0.5; /* the locale really reads ',' */
}

static void test_numbers_ignore_the_locale(void **state)
{
    (void)state;
    if (!comma_locale())
        skip();
    setenv("COURIER_FLUSH_INTERVAL", "0.005", 1);
    cr_config c;
    cr_config_init(&c);
    c.flush_interval = 1;
    char err[256] = "";
    int rc = cr_config_from_env(&c, err, sizeof err);
    unsetenv("COURIER_FLUSH_INTERVAL");
    assert_int_equal(rc, 0);
    assert_true(c.flush_interval == 0.005);

    char path[300];
    snprintf(path, sizeof path, "%s/weighted.el", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("0 1 1.5\n1 2 0.25\n", f);
    fclose(f);
    cr_edge_list l;
    rc = cr_graph_read_edges(path, CR_FILE_TEXT, NULL, 0, 1, &l, err, sizeof err);
    if (rc)
        fail_msg("%s", err);
    assert_int_equal(l.count, 2);
    assert_non_null(l.weights);
    assert_true(l.weights[0] == 1.5f && l.weights[1] == 0.25f);
    cr_graph_edges_free(&l);
    setlocale(LC_NUMERIC, "C");
}

static int remove_dir(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_numbers_ignore_the_locale)};
    return cmocka_run_group_tests(tests, NULL, remove_dir);
}
