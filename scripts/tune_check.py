#!/usr/bin/env python3
"""The cost model of docs/tuning.md against measurement, and `auto` against the fixed
configurations.

Runs each workload under every route and buffer size given, at each rank count and
virtual node size, with COURIER_VERBOSE=2: the runtime then prints, after every
barrier, the epoch's traffic, the time rank 0 measured between the two barriers' ends
and the model's prediction for the configuration that ran it. A run's figure is the
median over its heavy epochs (those with at least half the records of its heaviest):
the timed work, not the set-up around it. Then each workload runs under
COURIER_ROUTE=auto COURIER_BUFFER_SIZE=auto at the same layout.

Prints one line per run and, at the end:
  - the share of runs whose prediction lies within 25% of the measured time, from
    the costs alone, and after the model has learned the program's own time from one
    run of each workload and layout (direct with the largest buffer given): its
    measured time less the model's prediction, added to every other configuration's
    prediction, as the comm's second choice does after an epoch (docs/tuning.md);
  - per workload and layout, auto against the best fixed configuration of the sweep:
    the two run alternately --pairs times (default 3), and the ratio of their
    median epoch times (best / auto: auto's rate over the best's).

Usage:
  scripts/tune_check.py [BUILD] [--ranks 2,4,8] [--node-sizes 2,4]
      [--routes direct,nr,nlnr,grid,hypercube] [--buffers 1K,16K,64K]
      [--workloads histogram,gather,bfs,container,darray] [--tune-file FILE]
      [--scale N] [--pairs N]

BUILD defaults to build-release. Without --tune-file the model uses the default
costs; with one (courier-calibrate's output) it uses the machine's. Where ranks
share processors the costs depend on how many do (docs/tuning.md, "Calibration"): a
file of calibrations per shape (courier-calibrate --add) gives each run its own
shape's; --tune-file 2:FILE2,4:FILE4 instead gives each run the file of the largest
rank count listed that does not exceed its own. --scale
multiplies every workload's size (default 1). A run that fails ends the script with
its command and output.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

EPOCH = re.compile(r"courier: epoch (\d+): (\d+) records of (\d+) bytes per rank"
                   r"(?: \(merging as if from [0-9.e+]+ keys per destination\))?, "
                   r"([0-9.]+) us measured on rank 0, ([0-9.]+) us predicted for route "
                   r"(\S+), buffer (\d+) bytes")


def workload_args(name, build, route, node, scale):
    """The command of a workload; None when it cannot run this route."""
    n = lambda base: str(int(base * scale))
    apps = os.path.join(build, "apps")
    if name == "histogram":
        return [f"{apps}/histogram", "--mode", "courier", "--updates", n(1000000), "--reps", "5"]
    if name == "gather":
        return [f"{apps}/histogram", "--mode", "gather", "--updates", n(500000), "--reps", "5"]
    if name == "bfs":
        return [f"{apps}/bfs", "--scale", "15", "--roots", "4"]
    if name == "container":
        return [f"{apps}/container_bench", "--structure", "counting-set", "--inserts",
                n(1000000), "--keys", "1000", "--reps", "5"]
    if name == "darray":
        # darray_bench sets its routes itself: direct, grid, hypercube and auto
        if route not in ("direct", "grid", "hypercube", "auto"):
            return None
        return [f"{apps}/darray_bench", "--patterns", "neighborhood", "--mode", "async",
                "--route", route, "--node-size", str(node),
                "--vertices-per-rank", n(8192), "--reps", "5"]
    raise SystemExit(f"tune_check: unknown workload '{name}'")


def run(build, ranks, node, route, buffer, workload, tune_file, scale):
    cmd = workload_args(workload, build, route, node, scale)
    if cmd is None:
        return None
    env = dict(os.environ, COURIER_VERBOSE="2", COURIER_NODE_SIZE=str(node),
               COURIER_ROUTE=route, COURIER_BUFFER_SIZE=buffer)
    if tune_file:
        env["COURIER_TUNE_FILE"] = tune_file
    full = ["scripts/mpirun.sh", "-np", str(ranks)] + cmd
    p = subprocess.run(full, env=env, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        sys.exit(f"tune_check: failed ({p.returncode}): {' '.join(full)}\n{p.stdout}{p.stderr}")
    epochs = [(int(m[2]), float(m[4]), float(m[5]), m[6], int(m[7]))
              for m in EPOCH.finditer(p.stderr)]
    if not epochs:
        return None
    heaviest = max(e[0] for e in epochs)
    heavy = [e for e in epochs if e[0] * 2 >= heaviest]
    ran = f"{heavy[-1][3]}/{heavy[-1][4] // 1024}K"  # what the last heavy epoch ran
    return (statistics.median(e[1] for e in heavy), statistics.median(e[2] for e in heavy),
            heaviest, len(heavy), ran)


def tune_files(spec):
    """--tune-file: one FILE for every run, or RANKS:FILE,... ({ranks: file})."""
    if not spec:
        return {}
    files = {}
    for part in spec.split(","):
        ranks, sep, path = part.rpartition(":")
        if sep and not ranks.isdigit():
            sys.exit(f"tune_check: --tune-file {part}: expected FILE or RANKS:FILE")
        if not os.path.isfile(path):
            sys.exit(f"tune_check: --tune-file {path}: no such file")
        files[int(ranks) if sep else 0] = path
    return files


def file_for(files, ranks):
    """The file of the largest rank count listed at or below `ranks` ('' if none)."""
    fit = [k for k in files if k <= ranks]
    return files[max(fit)] if fit else ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build", nargs="?", default="build-release")
    ap.add_argument("--ranks", default="2,4,8")
    ap.add_argument("--node-sizes", default="2,4")
    ap.add_argument("--routes", default="direct,nr,nlnr,grid,hypercube")
    ap.add_argument("--buffers", default="1K,16K,64K")
    ap.add_argument("--workloads", default="histogram,gather,bfs,container,darray")
    ap.add_argument("--tune-file", default="")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--pairs", type=int, default=3)
    a = ap.parse_args()
    files = tune_files(a.tune_file)
    within = total = 0
    autos = []
    groups = {}
    print("workload ranks node route buffer: measured_us predicted_us predicted/measured "
          "(records per rank of the heaviest epoch, heavy epochs)")
    for w in a.workloads.split(","):
        for p in map(int, a.ranks.split(",")):
            for node in map(int, a.node_sizes.split(",")):
                if node > p:
                    continue
                best = None
                for r in a.routes.split(","):
                    for b in a.buffers.split(","):
                        got = run(a.build, p, node, r, b, w, file_for(files, p), a.scale)
                        if not got:
                            continue
                        meas, pred, recs, nheavy, _ = got
                        groups.setdefault((w, p, node), []).append((r, b, meas, pred))
                        ok = abs(pred - meas) <= 0.25 * meas
                        within += ok
                        total += 1
                        print(f"{w} {p} {node} {r} {b}: {meas:.1f} {pred:.1f} {pred / meas:.2f}"
                              f"{'' if ok else ' (off)'} ({recs}, {nheavy})", flush=True)
                        if best is None or meas < best[0]:
                            best = (meas, r, b)
                if not best or run(a.build, p, node, "auto", "auto", w, file_for(files, p),
                                   a.scale) is None:
                    continue
                # auto against the best fixed configuration of the sweep, alternated
                mine, theirs, ran = [], [], set()
                for _ in range(a.pairs):
                    got = run(a.build, p, node, "auto", "auto", w, file_for(files, p), a.scale)
                    mine.append(got[0])
                    ran.add(got[4])
                    theirs.append(run(a.build, p, node, best[1], best[2], w,
                                      file_for(files, p), a.scale)[0])
                ratio = statistics.median(theirs) / statistics.median(mine)
                autos.append((w, p, node, ratio, best))
                print(f"{w} {p} {node} auto: {statistics.median(mine):.1f} us; best fixed "
                      f"{best[1]}/{best[2]} {statistics.median(theirs):.1f} us ({a.pairs} "
                      f"alternating pairs); auto's rate over the best's {ratio:.2f}; auto ran "
                      f"{', '.join(sorted(ran))}", flush=True)
    if total:
        print(f"\npredictions within 25% of the measured epoch: {within} of {total} "
              f"({100.0 * within / total:.0f}%)")
    learned = near = 0
    largest = a.buffers.split(",")[-1]
    for runs in groups.values():
        base = [x for x in runs if x[0] == "direct" and x[1] == largest]
        if not base:
            continue
        own = base[0][2] - base[0][3]  # the program's time the model does not see
        for r, b, meas, pred in runs:
            if (r, b) == ("direct", largest):
                continue
            learned += 1
            near += abs(pred + own - meas) <= 0.25 * meas
    if learned:
        print(f"after learning the program's own time from direct/{largest}: {near} of {learned} "
              f"within 25% ({100.0 * near / learned:.0f}%)")
    if autos:
        good = sum(1 for x in autos if x[3] >= 0.9)
        print(f"auto at 0.9 of the best fixed configuration or better: {good} of {len(autos)}; "
              f"lowest {min(x[3] for x in autos):.2f}")


if __name__ == "__main__":
    main()
