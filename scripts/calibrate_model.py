#!/usr/bin/env python3
"""Fit the scale model's alpha, beta and gamma on this machine.

    scripts/calibrate_model.py [BUILD] [--ranks P] [--quick]

alpha (microseconds per message) and beta (nanoseconds per byte) come from
apps/ring: one token, buffers of 1 byte so that every hop is its own MPI message,
payloads from 8 bytes to 256 KiB; a line through microseconds per hop against
payload bytes, fitted by least squares of the relative error. gamma (nanoseconds per record handled) comes from
apps/histogram: for several buffer sizes, the slowest rank's time minus what alpha
and beta explain of its MPI sends and bytes, divided by the records it handled
(the median over the runs). Then the script prints the three values, the
histogram's measured times next to the times the model predicts with them, and
the flags to pass to apps/scale_model and apps/dedup_model.

Everything here runs on one node over shared memory: the fit says what a message
costs on this machine, not between the nodes of a cluster (docs/scaling.md).
"""
import csv
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("calibrate_model: %s failed:\n%s%s" % (" ".join(cmd), r.stdout, r.stderr))
    return r.stdout


def fit_line(xs, ys):
    """Least squares of the relative error (weights 1/y^2): the small payloads, which
    fix alpha, count as much as the large ones, which fix beta."""
    w = [1.0 / (y * y) for y in ys]
    sw = sum(w)
    mx = sum(wi * x for wi, x in zip(w, xs)) / sw
    my = sum(wi * y for wi, y in zip(w, ys)) / sw
    sxx = sum(wi * (x - mx) ** 2 for wi, x in zip(w, xs))
    sxy = sum(wi * (x - mx) * (y - my) for wi, x, y in zip(w, xs, ys))
    slope = sxy / sxx
    return my - slope * mx, slope


def main():
    args = [a for a in sys.argv[1:]]
    quick = "--quick" in args
    args = [a for a in args if a != "--quick"]
    ranks = 2
    if "--ranks" in args:
        i = args.index("--ranks")
        ranks = int(args[i + 1])
        del args[i:i + 2]
    build = args[0] if args else "build"
    apps = os.path.join(ROOT, build, "apps") if not os.path.isabs(build) else os.path.join(build, "apps")
    mpirun = [os.path.join(ROOT, "scripts", "mpirun.sh"), "-np", str(ranks)]
    tmp = tempfile.mkdtemp(prefix="calibrate.")

    payloads = [8, 64, 512, 4096, 32768, 262144]
    laps = 200 if quick else 2000
    ring_csv = os.path.join(tmp, "ring.csv")
    for p in payloads:
        run(mpirun + [os.path.join(apps, "ring"), "--laps", str(laps), "--payload", str(p),
                      "--csv", ring_csv])
    with open(ring_csv) as f:
        rows = list(csv.DictReader(f))
    xs = [float(r["payload"]) for r in rows]
    ys = [float(r["us_per_hop"]) for r in rows]
    alpha, slope = fit_line(xs, ys)
    beta = slope * 1000.0  # us per byte -> ns per byte
    print("ring, %d ranks, one token, every hop its own MPI message:" % ranks)
    print("| payload B | us per hop | fit |\n|---|---|---|")
    for x, y in zip(xs, ys):
        print("| %d | %.2f | %.2f |" % (x, y, alpha + slope * x))
    print("\nalpha = %.2f us per message, beta = %.3f ns per byte\n" % (alpha, beta))

    hist_csv = os.path.join(tmp, "hist.csv")
    updates = "256K" if quick else "2M"
    for kb in [1, 4, 16, 64]:
        run(mpirun + [os.path.join(apps, "histogram"), "--updates", updates, "--reps", "3",
                      "--mode", "courier", "--buffer-kb", str(kb), "--csv", hist_csv])
    with open(hist_csv) as f:
        rows = list(csv.DictReader(f))
    gammas = []
    for r in rows:
        sends = float(r["mpi_sends_max"])
        nbytes = (float(r["bytes_on_node"]) + float(r["bytes_off_node"])) / ranks
        records = float(r["records_handled_max"])
        rest_us = float(r["seconds"]) * 1e6 - alpha * sends - beta * 1e-3 * nbytes
        gammas.append(rest_us * 1e3 / records)
    gamma = statistics.median(gammas)
    print("histogram, %d ranks, %s updates per rank, 3 repetitions per buffer size:" % (ranks, updates))
    print("| buffer B | MPI sends, max | records, max | measured ms | predicted ms |\n|---|---|---|---|---|")
    for r in rows:
        sends = float(r["mpi_sends_max"])
        nbytes = (float(r["bytes_on_node"]) + float(r["bytes_off_node"])) / ranks
        records = float(r["records_handled_max"])
        pred = alpha * sends + beta * 1e-3 * nbytes + gamma * 1e-3 * records
        print("| %s | %d | %d | %.2f | %.2f |" % (r["buffer_bytes"], sends, records,
                                                 float(r["seconds"]) * 1e3, pred / 1e3))
    print("\ngamma = %.2f ns per record handled (median of %d runs)\n" % (gamma, len(gammas)))
    print("flags: --alpha %.2f --beta %.3f --gamma %.2f" % (alpha, max(beta, 0.0), max(gamma, 0.0)))


if __name__ == "__main__":
    main()
