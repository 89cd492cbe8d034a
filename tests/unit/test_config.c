/* Configuration: defaults, environment parsing, errors that name variable, value
 * and range. */
#include "courier/mailbox.h"
#include "mailbox/config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

#include <cmocka.h>

static const char *vars[] = {"COURIER_BUFFER_SIZE", "COURIER_BUFFER_CAP", "COURIER_MAX_INFLIGHT",
                             "COURIER_FLUSH_INTERVAL", "COURIER_WATCHDOG", "COURIER_VERBOSE",
                             "COURIER_RECV", "COURIER_ROUTE", "COURIER_NODE_SIZE",
                             "COURIER_EXCHANGE", "COURIER_ALLREDUCE", "COURIER_ALLGATHER",
                             "COURIER_TRACE", "COURIER_WATCHDOG_ABORT", "COURIER_STATS",
                             "COURIER_FLOW", "COURIER_PARK_CAP", "COURIER_PARK_RELIEF",
                             "COURIER_NEST_LIMIT", "COURIER_SHM", "COURIER_SHM_BYTES"};

static int clear_env(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);
    return 0;
}

static void test_defaults_are_valid(void **state)
{
    (void)state;
    cr_config c;
    cr_config_init(&c);
    char err[256] = "";
    assert_int_equal(cr_config_validate(&c, err, sizeof err), 0);
    assert_int_equal(cr_config_from_env(&c, err, sizeof err), 0);
    cr_config d;
    cr_config_init(&d);
    assert_memory_equal(&c, &d, sizeof c);
}

static void test_good_values(void **state)
{
    (void)state;
    setenv("COURIER_BUFFER_SIZE", "64K", 1);
    setenv("COURIER_BUFFER_CAP", "2MiB", 1);
    setenv("COURIER_MAX_INFLIGHT", "7", 1);
    setenv("COURIER_FLUSH_INTERVAL", "250us", 1);
    setenv("COURIER_WATCHDOG", "0", 1);
    setenv("COURIER_VERBOSE", "2", 1);
    setenv("COURIER_RECV", "prepost", 1);
    setenv("COURIER_ROUTE", "grid:4x2", 1);
    setenv("COURIER_NODE_SIZE", "3", 1);
    setenv("COURIER_EXCHANGE", "pcx", 1);
    setenv("COURIER_ALLREDUCE", "dissemination:3", 1);
    setenv("COURIER_ALLGATHER", "sparbit", 1);
    setenv("COURIER_FLOW", "waits", 1);
    setenv("COURIER_PARK_CAP", "96K", 1);
    setenv("COURIER_PARK_RELIEF", "0", 1);
    setenv("COURIER_SHM", "off", 1);
    setenv("COURIER_SHM_BYTES", "3M", 1);
    cr_config c;
    cr_config_init(&c);
    char err[256] = "";
    assert_int_equal(cr_config_from_env(&c, err, sizeof err), 0);
    assert_int_equal(c.buffer_bytes, 65536);
    assert_int_equal(c.buffer_cap_bytes, 2 << 20);
    assert_int_equal(c.max_inflight, 7);
    assert_true(c.flush_interval > 249e-6 && c.flush_interval < 251e-6);
    assert_true(c.watchdog_seconds == 0);
    assert_int_equal(c.verbosity, 2);
    assert_int_equal(c.recv_mode, CR_RECV_PREPOST);
    assert_int_equal(c.route.kind, CR_ROUTE_GRID);
    assert_int_equal(c.route.ndims, 2);
    assert_int_equal(c.route.dims[0], 4);
    assert_int_equal(c.route.dims[1], 2);
    assert_int_equal(c.node_size, 3);
    assert_int_equal(c.exchange, CR_NBX_PROTOCOL_PCX);
    assert_int_equal(c.allreduce, CR_ALLREDUCE_DISSEMINATION);
    assert_int_equal(c.allreduce_ports, 3);
    assert_int_equal(c.allgather, CR_ALLGATHER_SPARBIT);
    assert_int_equal(c.flow, CR_FLOW_WAITS);
    assert_int_equal(c.park_cap_bytes, 96 << 10);
    assert_int_equal(c.park_relief_polls, 0);
    assert_false(c.shm);
    assert_int_equal(c.shm_bytes, 3 << 20);
    setenv("COURIER_SHM", "on", 1);
    setenv("COURIER_FLOW", "deep-held", 1);
    assert_int_equal(cr_config_from_env(&c, err, sizeof err), 0);
    assert_int_equal(c.flow, CR_FLOW_DEEP_HELD);
    assert_true(c.shm);
    assert_false(c.buffer_auto);
    setenv("COURIER_ROUTE", "auto", 1);
    setenv("COURIER_BUFFER_SIZE", "auto", 1);
    assert_int_equal(cr_config_from_env(&c, err, sizeof err), 0);
    assert_int_equal(c.route.kind, CR_ROUTE_AUTO);
    assert_true(c.buffer_auto);
    assert_int_equal(c.buffer_bytes, 65536); /* what the choice may not exceed */
    assert_int_equal(cr_config_validate(&c, err, sizeof err), 0);

    setenv("COURIER_BUFFER_SIZE", "1", 1);
    setenv("COURIER_FLUSH_INTERVAL", "0.5", 1);
    setenv("COURIER_RECV", "probe", 1);
    assert_int_equal(cr_config_from_env(&c, err, sizeof err), 0);
    assert_int_equal(c.buffer_bytes, 1);
    assert_true(c.flush_interval == 0.5);
    assert_int_equal(c.recv_mode, CR_RECV_PROBE);
}

/* Each bad value fails, leaves the config unchanged, and the message names the
 * variable, the value and the range. */
static void expect_bad(const char *var, const char *value, const char *range_text)
{
    clear_env(NULL);
    setenv(var, value, 1);
    cr_config c, before;
    cr_config_init(&c);
    before = c;
    char err[512] = "";
    assert_int_equal(cr_config_from_env(&c, err, sizeof err), -1);
    assert_memory_equal(&c, &before, sizeof c);
    assert_non_null(strstr(err, var));
    assert_non_null(strstr(err, value));
    assert_non_null(strstr(err, range_text));
    assert_null(strchr(err, '\n'));
}

static void test_bad_values(void **state)
{
    (void)state;
    expect_bad("COURIER_BUFFER_SIZE", "abc", "from 1 to 1073741824");
    expect_bad("COURIER_BUFFER_SIZE", "0", "from 1 to");
    expect_bad("COURIER_BUFFER_SIZE", "-5", "from 1 to");
    expect_bad("COURIER_BUFFER_SIZE", "2G", "from 1 to 1073741824");
    expect_bad("COURIER_BUFFER_SIZE", "64X", "suffixes K, M, G");
    expect_bad("COURIER_BUFFER_SIZE", "99999999999999999999999", "from 1 to");
    expect_bad("COURIER_BUFFER_CAP", "", "size in bytes");
    expect_bad("COURIER_MAX_INFLIGHT", "0", "from 1 to 65536");
    expect_bad("COURIER_MAX_INFLIGHT", "12abc", "from 1 to 65536");
    expect_bad("COURIER_FLUSH_INTERVAL", "-1", "from 0 to 3600");
    expect_bad("COURIER_FLUSH_INTERVAL", "5 min", "from 0 to 3600");
    expect_bad("COURIER_FLUSH_INTERVAL", "nan", "from 0 to 3600");
    expect_bad("COURIER_WATCHDOG", "1e9", "from 0 to 86400");
    expect_bad("COURIER_VERBOSE", "4", "from 0 to 3");
    expect_bad("COURIER_RECV", "polling", "probe or prepost");
    expect_bad("COURIER_FLOW", "deep", "expected waits or deep-held");
    expect_bad("COURIER_PARK_CAP", "1T", "size in bytes");
    expect_bad("COURIER_PARK_RELIEF", "-3", "from 0 to 1048576");
    expect_bad("COURIER_ROUTE", "mesh", "expected direct, nr, nlnr, grid, grid:AxBx..., hypercube or auto");
    expect_bad("COURIER_ROUTE", "grid:4x0", "joined by 'x'");
    expect_bad("COURIER_NODE_SIZE", "-1", "from 0 to 1073741824");
    expect_bad("COURIER_EXCHANGE", "default", "expected nbx, pex or pcx");
    expect_bad("COURIER_EXCHANGE", "NBX", "expected nbx, pex or pcx");
    expect_bad("COURIER_ALLREDUCE", "fast", "expected auto, binomial, butterfly, dissemination[:n], bruck[:n] with n from 1 to 64, or shared");
    expect_bad("COURIER_ALLREDUCE", "butterfly:2", "expected auto, binomial");
    expect_bad("COURIER_ALLREDUCE", "bruck:0", "with n from 1 to 64");
    expect_bad("COURIER_ALLREDUCE", "bruck:", "with n from 1 to 64");
    expect_bad("COURIER_ALLGATHER", "tree", "expected auto, ring, neighbor, recdoubling, bruck, sparbit or shared");
    expect_bad("COURIER_SHM", "1", "expected on or off");
    expect_bad("COURIER_SHM", "yes", "expected on or off");
    expect_bad("COURIER_SHM_BYTES", "lots", "size in bytes");
}

static void test_validate_rejects_out_of_range(void **state)
{
    (void)state;
    char err[256];
    cr_config c;
    cr_config_init(&c);
    c.buffer_bytes = 0;
    assert_int_equal(cr_config_validate(&c, err, sizeof err), -1);
    assert_non_null(strstr(err, "buffer_bytes=0"));
    cr_config_init(&c);
    c.max_inflight = 0;
    assert_int_equal(cr_config_validate(&c, err, sizeof err), -1);
    assert_non_null(strstr(err, "max_inflight=0"));
    cr_config_init(&c);
    c.flush_interval = -0.1;
    assert_int_equal(cr_config_validate(&c, err, sizeof err), -1);
    cr_config_init(&c);
    c.recv_mode = (cr_recv_mode)9;
    assert_int_equal(cr_config_validate(&c, err, sizeof err), -1);
    assert_non_null(strstr(err, "recv_mode=9"));
    cr_config_init(&c);
    c.route.kind = CR_ROUTE_GRID;
    c.route.ndims = 2;
    c.route.dims[0] = 0;
    assert_int_equal(cr_config_validate(&c, err, sizeof err), -1);
    assert_non_null(strstr(err, "route grid"));
}

/* Both bounds of every field through the programmatic path: the value at each bound
 * is accepted, the one just outside is rejected with the field's name. */
#define EXPECT_VALID(field, value)                                                       \
    do {                                                                                 \
        cr_config_init(&c);                                                              \
        c.field = (value);                                                               \
        if (cr_config_validate(&c, err, sizeof err) != 0)                                \
            fail_msg("%s = %s rejected: %s", #field, #value, err);                       \
    } while (0)
#define EXPECT_INVALID(field, value, name)                                               \
    do {                                                                                 \
        cr_config_init(&c);                                                              \
        c.field = (value);                                                               \
        err[0] = '\0';                                                                   \
        if (cr_config_validate(&c, err, sizeof err) != -1)                               \
            fail_msg("%s = %s accepted", #field, #value);                                \
        if (!strstr(err, name))                                                          \
            fail_msg("%s = %s: message '%s' does not name %s", #field, #value, err, name); \
    } while (0)

static void test_validate_checks_both_bounds(void **state)
{
    (void)state;
    char err[256];
    cr_config c;
    const size_t GiB = (size_t)1 << 30;
    EXPECT_VALID(buffer_bytes, 1);
    EXPECT_VALID(buffer_bytes, GiB);
    EXPECT_INVALID(buffer_bytes, 0, "buffer_bytes=");
    EXPECT_INVALID(buffer_bytes, GiB + 1, "buffer_bytes=");
    EXPECT_VALID(buffer_cap_bytes, 1);
    EXPECT_VALID(buffer_cap_bytes, 64 * GiB);
    EXPECT_INVALID(buffer_cap_bytes, 0, "buffer_cap_bytes=");
    EXPECT_INVALID(buffer_cap_bytes, 64 * GiB + 1, "buffer_cap_bytes=");
    EXPECT_VALID(max_inflight, 1);
    EXPECT_VALID(max_inflight, 65536);
    EXPECT_INVALID(max_inflight, 0, "max_inflight=");
    EXPECT_INVALID(max_inflight, 65537, "max_inflight=");
    EXPECT_VALID(flush_interval, 0);
    EXPECT_VALID(flush_interval, 3600);
    EXPECT_INVALID(flush_interval, -1e-9, "flush_interval=");
    EXPECT_INVALID(flush_interval, 3600.001, "flush_interval=");
    EXPECT_INVALID(flush_interval, NAN, "flush_interval=");
    EXPECT_VALID(watchdog_seconds, 0);
    EXPECT_VALID(watchdog_seconds, 0.1);
    EXPECT_VALID(watchdog_seconds, 86400);
    EXPECT_INVALID(watchdog_seconds, -1, "watchdog_seconds=");
    EXPECT_INVALID(watchdog_seconds, 1e-7, "watchdog_seconds=");
    EXPECT_INVALID(watchdog_seconds, 86400.5, "watchdog_seconds=");
    EXPECT_INVALID(watchdog_seconds, NAN, "watchdog_seconds=");
    EXPECT_VALID(verbosity, 0);
    EXPECT_VALID(verbosity, 3);
    EXPECT_INVALID(verbosity, -1, "verbosity=");
    EXPECT_INVALID(verbosity, 4, "verbosity=");
    EXPECT_VALID(recv_mode, CR_RECV_PREPOST);
    EXPECT_INVALID(recv_mode, (cr_recv_mode)-1, "recv_mode=");
    EXPECT_INVALID(recv_mode, (cr_recv_mode)2, "recv_mode=");
    EXPECT_VALID(flow, CR_FLOW_WAITS);
    EXPECT_VALID(flow, CR_FLOW_DEEP_HELD);
    EXPECT_INVALID(flow, (cr_flow_policy)-1, "expected CR_FLOW_WAITS or CR_FLOW_DEEP_HELD");
    EXPECT_INVALID(flow, (cr_flow_policy)7, "flow=7");
    EXPECT_VALID(node_size, 1u << 30);
    EXPECT_INVALID(node_size, (1u << 30) + 1, "node_size=");
    EXPECT_VALID(exchange, CR_NBX_PROTOCOL_NBX);
    EXPECT_VALID(exchange, CR_NBX_PROTOCOL_PCX);
    EXPECT_INVALID(exchange, (cr_nbx_protocol)(CR_NBX_PROTOCOL_NBX - 1), "exchange=");
    EXPECT_INVALID(exchange, (cr_nbx_protocol)(CR_NBX_PROTOCOL_PCX + 1), "exchange=");
    EXPECT_VALID(allreduce, CR_ALLREDUCE_AUTO);
    EXPECT_VALID(allreduce, CR_ALLREDUCE_SHARED);
    EXPECT_INVALID(allreduce, (cr_allreduce_algorithm)(CR_ALLREDUCE_AUTO - 1), "allreduce=");
    EXPECT_INVALID(allreduce, (cr_allreduce_algorithm)(CR_ALLREDUCE_SHARED + 1), "allreduce=");
    EXPECT_VALID(allreduce_ports, 64);
    EXPECT_INVALID(allreduce_ports, 65, "allreduce=");
    EXPECT_VALID(allgather, CR_ALLGATHER_AUTO);
    EXPECT_VALID(allgather, CR_ALLGATHER_SHARED);
    EXPECT_INVALID(allgather, (cr_allgather_algorithm)(CR_ALLGATHER_AUTO - 1), "allgather=");
    EXPECT_INVALID(allgather, (cr_allgather_algorithm)(CR_ALLGATHER_SHARED + 1), "allgather=");
    EXPECT_VALID(route.kind, CR_ROUTE_HYPERCUBE);
    EXPECT_INVALID(route.kind, (cr_route_kind)(CR_ROUTE_AUTO + 1), "route.kind=");
    cr_config_init(&c);
    c.route.kind = CR_ROUTE_GRID;
    c.route.ndims = CR_ROUTE_MAX_DIMS;
    for (unsigned i = 0; i < CR_ROUTE_MAX_DIMS; i++)
        c.route.dims[i] = 1;
    assert_int_equal(cr_config_validate(&c, err, sizeof err), 0);
    c.route.ndims = CR_ROUTE_MAX_DIMS + 1;
    assert_int_equal(cr_config_validate(&c, err, sizeof err), -1);
    assert_non_null(strstr(err, "route grid"));
}

static void test_watchdog_minimum_from_env(void **state)
{
    (void)state;
    expect_bad("COURIER_WATCHDOG", "1e-7", "expected 0 (off) or seconds from 0.1 to 86400");
    setenv("COURIER_WATCHDOG", "0.1", 1);
    cr_config c;
    cr_config_init(&c);
    char err[256];
    assert_int_equal(cr_config_from_env(&c, err, sizeof err), 0);
    assert_true(c.watchdog_seconds == 0.1);
}

static void test_watchdog_abort_and_stats_from_env(void **state)
{
    (void)state;
    cr_config c;
    cr_config_init(&c);
    assert_int_equal(c.watchdog_abort, 0);
    assert_false(c.print_stats);
    setenv("COURIER_WATCHDOG_ABORT", "5", 1);
    setenv("COURIER_STATS", "1", 1);
    char err[256];
    assert_int_equal(cr_config_from_env(&c, err, sizeof err), 0);
    assert_int_equal(c.watchdog_abort, 5);
    assert_true(c.print_stats);
    setenv("COURIER_STATS", "2", 1);
    assert_int_equal(cr_config_from_env(&c, err, sizeof err), -1);
    assert_non_null(strstr(err, "COURIER_STATS='2' is not valid"));
    c.watchdog_abort = 1001;
    assert_int_equal(cr_config_validate(&c, err, sizeof err), -1);
}

/* A misspelled name is matched to the known one it is nearest to. */
static void test_nearest_variable(void **state)
{
    (void)state;
    assert_true(cr_config_is_known_variable("COURIER_BUFFER_SIZE"));
    assert_false(cr_config_is_known_variable("COURIER_BUFER_SIZE"));
    assert_string_equal(cr_config_nearest_variable("COURIER_BUFER_SIZE"), "COURIER_BUFFER_SIZE");
    assert_string_equal(cr_config_nearest_variable("COURIER_WATCHDOG_ABRT"), "COURIER_WATCHDOG_ABORT");
    assert_string_equal(cr_config_nearest_variable("COURIER_ROUTES"), "COURIER_ROUTE");
    assert_string_equal(cr_config_nearest_variable("COURIER_STAT"), "COURIER_STATS");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_defaults_are_valid, clear_env),
        cmocka_unit_test_setup(test_good_values, clear_env),
        cmocka_unit_test_setup(test_bad_values, clear_env),
        cmocka_unit_test_setup(test_validate_rejects_out_of_range, clear_env),
        cmocka_unit_test_setup(test_validate_checks_both_bounds, clear_env),
        cmocka_unit_test_setup(test_watchdog_minimum_from_env, clear_env),
        cmocka_unit_test_setup(test_watchdog_abort_and_stats_from_env, clear_env),
        cmocka_unit_test_setup(test_nearest_variable, clear_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
