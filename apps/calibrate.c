/* courier-calibrate: measure what messages and records cost on this machine and write
 * the calibration file that COURIER_TUNE_FILE names (docs/tuning.md, "Calibration"). */
#include "cli.h"

#include <courier.h>
#include <courier/tune.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "Usage: mpirun -np P courier-calibrate [--output FILE] [--add] [--hops H] [--records N]\n"
    "\n"
    "Measures, over the runtime itself, what the cost model of COURIER_ROUTE=auto and\n"
    "COURIER_BUFFER_SIZE=auto needs: the time of one message and of one byte between\n"
    "rank 0 and a rank of its node (and of another node, when the job has one), and\n"
    "the time to append and handle a record. Writes them to FILE for COURIER_TUNE_FILE.\n"
    "Run it once per machine with at least 2 ranks on one node (and 2 nodes, to\n"
    "measure the network); a file is refused on nodes of another processor count.\n"
    "Where ranks share processors, the costs depend on how many do: with --add, one\n"
    "FILE holds a calibration per job shape, and a job reads the one measured with its\n"
    "number of ranks on a machine (or the nearest).\n"
    "\n"
    "  --output FILE  where to write the calibration (default courier-tune.txt)\n"
    "  --add          keep FILE's calibrations of other shapes (ranks on the machine,\n"
    "                 ranks to a node), replacing only the one of this job's shape\n"
    "  --hops H       messages bounced between two ranks per measurement (default 2000)\n"
    "  --records N    records appended and handled per measurement (default 1M)\n"
    "\n"
    "Each figure is the median of 5 measurements. Without a second node the costs\n"
    "between nodes are the library's defaults, and the program says so.\n";

typedef struct options {
    const char *output;
    bool add;
    uint64_t hops, records;
    app_shared sh;
} options;

static void parse_options(app *a, int argc, char **argv, options *o)
{
    *o = (options){.output = "courier-tune.txt", .hops = 2000, .records = 1 << 20};
    app_shared_init(&o->sh);
    static const struct option opts[] = {{"output", required_argument, 0, 'o'},
                                         {"add", no_argument, 0, 'a'},
                                         {"hops", required_argument, 0, 'H'},
                                         {"records", required_argument, 0, 'n'},
                                         APP_LONG_COMMON,
                                         {0, 0, 0, 0}};
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (ch) {
        case 'o': o->output = optarg; break;
        case 'a': o->add = true; break;
        case 'H': o->hops = app_parse_u64(a, "--hops", optarg, 10, 1000000); break;
        case 'n': o->records = app_parse_u64(a, "--records", optarg, 1000, 1ULL << 30); break;
        default: app_other_option(a, ch, optarg, &o->sh, argv);
        }
    }
    app_no_operands(a, argc, argv);
    if (a->size < 2)
        app_usage_error(a, "calibration needs at least 2 ranks (mpirun -np 2 or more)");
}

int main(int argc, char **argv)
{
    app a;
    app_init(&a, "courier-calibrate", usage, &argc, &argv);
    options o;
    parse_options(&a, argc, argv, &o);
    cr_config cfg;
    app_config_from_env(&a, &cfg);
    cr_calibration cal;
    cr_calibrate(MPI_COMM_WORLD, &cfg,
                 &(cr_calibrate_opts){.hops = o.hops, .records = o.records, .repeats = 5}, &cal);
    const cr_tune_costs c = cal.costs;
    FILE *csv = app_open_csv(&a, o.sh.csv,
                             "ranks,alpha_on,beta_on,alpha_off,beta_off,append,handle,"
                             "route_record,forward,file");
    char err[400] = "";
    bool wrote = a.rank != 0 ||
                 (o.add ? cr_tune_costs_add : cr_tune_costs_save)(o.output, &c, &cal.shape, err,
                                                                   sizeof err) == 0;
    if (!wrote && o.add)
        strncat(err, " (--add keeps the file; without it the file is written anew)",
                sizeof err - strlen(err) - 1);
    app_agree(&a, wrote ? NULL : err);
    if (a.rank == 0 && !o.sh.quiet)
        printf("courier-calibrate: %d ranks; within a node %s: %.2f us per message, %.3f ns per "
               "byte; between nodes %s: %.2f us, %.3f ns; %.1f ns per record appended and "
               "handled, %.1f ns more under a route, %.1f ns more per record passed on%s; "
               "%s %s\n",
               a.size, cal.partner_on > 0 ? "(measured)" : "(no second rank there: default)",
               c.alpha_on * 1e6, c.beta_on * 1e9,
               cal.partner_off > 0 ? "(measured)" : "(no second node: default)", c.alpha_off * 1e6,
               c.beta_off * 1e9, (c.append + c.handle) * 1e9, c.route_record * 1e9, c.forward * 1e9,
               a.size < 3 ? " (nothing is passed on at 2 ranks: 0)" : "",
               o.add ? "added to" : "written to", o.output);
    if (csv) {
        fprintf(csv, "%d,%.6e,%.6e,%.6e,%.6e,%.6e,%.6e,%.6e,%.6e,%s\n", a.size, c.alpha_on,
                c.beta_on, c.alpha_off, c.beta_off, c.append, c.handle, c.route_record, c.forward,
                o.output);
        fclose(csv);
    }
    MPI_Finalize();
    return 0;
}
