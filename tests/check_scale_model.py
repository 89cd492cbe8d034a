#!/usr/bin/env python3
"""The scale model's counts equal the MPI runtime's (a cross-check):
apps/scale_model on P virtual ranks and apps/darray_bench under
mpirun -np P run the same three patterns (overload; neighborhood and pointer
doubling on the same R-MAT graph, 1024 vertices per rank) in lock-step under direct,
2D grid and hypercube routes and every aggregation; the messages per rank (max and
mean), the bytes of the busiest rank and the requests reaching the busiest owner
must be the same. The model's boruvka pattern (the graph never stored, its lightest
edges found chunk by chunk) must count what the MPI run's pointer doubling counts.

usage: check_scale_model.py SCALE_MODEL DARRAY_BENCH MPIRUN P
"""
import csv
import os
import subprocess
import sys
import tempfile


def rows(path, key):
    with open(path) as f:
        return {key(r): r for r in csv.DictReader(f)}


def main():
    model, bench, mpirun, p = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
    with tempfile.TemporaryDirectory() as tmp:
        mcsv, bcsv = os.path.join(tmp, "model.csv"), os.path.join(tmp, "bench.csv")
        patterns = "overload,neighborhood,doubling"
        subprocess.run([model, "--ranks", p, "--route", "direct,grid,hypercube",
                        "--patterns", patterns + ",boruvka", "--vertices-per-rank", "1024",
                        "--csv", mcsv], check=True, stdout=subprocess.DEVNULL)
        subprocess.run([mpirun, "-np", p, bench, "--patterns", patterns, "--mode",
                        "lockstep", "--vertices-per-rank", "1024", "--reps", "1",
                        "--csv", bcsv], check=True, stdout=subprocess.DEVNULL)
        m = rows(mcsv, lambda r: (r["pattern"], r["route"], r["aggregation"]))
        b = rows(bcsv, lambda r: (r["pattern"], r["route"], r["aggregation"]))
    bad = 0
    for k in sorted(m):
        mpi_key = ("doubling",) + k[1:] if k[0] == "boruvka" else k
        if mpi_key not in b:
            print(f"{k}: the MPI run has no such row")
            bad += 1
            continue
        x, y = m[k], b[mpi_key]
        pairs = [("messages max", float(x["msgs_max"]), float(y["msgs_max"]), 0),
                 ("messages mean", float(x["msgs_mean"]), float(y["msgs_mean"]), 0.051),
                 ("MiB max", float(x["bytes_max"]) / 1048576, float(y["mib_max"]), 0.0006),
                 ("requests reaching the busiest owner", float(x["reached_owner_max"]),
                  float(y["reached_owner_max"]), 0)]
        for name, got, want, tol in pairs:
            ok = abs(got - want) <= tol
            bad += not ok
            print(f"{'ok ' if ok else 'BAD'} P={p} {k[0]:12} {k[1]:9} {k[2]:4} {name}: "
                  f"model {got:g}, MPI {want:g}")
        if x["verified"] != "yes" or y["verified"] != "1":
            print(f"BAD {k}: a run was not verified")
            bad += 1
    if not m:
        print("no rows from the model")
        bad += 1
    sys.exit(1 if bad else 0)


main()
