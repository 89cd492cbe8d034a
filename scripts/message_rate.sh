#!/usr/bin/env bash
# The README's message-rate table (bale's histogram and index-gather workloads):
# 5M uniform random 8-byte updates per rank into 10,000 counters per rank, through
# Courier with batch handlers and with per-record handlers, MPI_Alltoallv, and the
# machine's ceiling (one process, no MPI, --mode local); then 5M requests per rank
# answered by replies (--mode gather). Every run is the median of 5 repetitions;
# RUNS runs per rank count, the modes alternating within each run. Prints ranges
# over the runs and the median of the ratios to the local loop, each ratio taken
# within one run.
#
#   scripts/message_rate.sh [BUILD_DIR] [RUNS] [RANKS...]     (default: build 3 2 4)
set -euo pipefail
build=${1:-build}
runs=${2:-3}
shift $(( $# > 2 ? 2 : $# ))
ranks=("$@")
[ ${#ranks[@]} -eq 0 ] && ranks=(2 4)
mpirun="$(dirname "$0")/mpirun.sh"  # Open MPI settings for root and oversubscription
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# The same workload runs at twice the speed on some days on the shared VMs this was
# measured on; one-hop latency tells the two states apart, so it is printed first.
"$mpirun" -np 2 "$build/apps/ring" --laps 2000 | sed -n 's/.*: \([0-9.]* us per hop\).*/machine state: ring latency \1 (2 ranks)/p'

for ((i = 0; i < runs; i++)); do
    for np in "${ranks[@]}"; do
        table=$((10000 * np))
        "$mpirun" -np "$np" "$build/apps/histogram" --updates 5M --table "$table" --reps 5 \
            --mode courier,alltoallv,local,gather --csv "$dir/batch.$np.$i.csv" >/dev/null
        "$mpirun" -np "$np" "$build/apps/histogram" --updates 5M --table "$table" --reps 5 \
            --mode courier,local --handler record --csv "$dir/record.$np.$i.csv" >/dev/null
    done
done

python3 - "$dir" "$runs" "${ranks[@]}" <<'PY'
import csv, statistics, sys
d, runs, ranks = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def rates(kind, np, i):
    with open(f"{d}/{kind}.{np}.{i}.csv") as f:
        return {r["mode"]: float(r["updates_per_s"]) / 1e6 for r in csv.DictReader(f)}
def rng(v):
    return f"{min(v):.0f}-{max(v):.0f}" if round(min(v)) != round(max(v)) else f"{min(v):.0f}"
def med(v):
    return f"{statistics.median(v):.3f}"
print("| ranks | Courier, batch handler: M updates/s | ratio to local | Courier, handler per record | ratio to local | alltoallv | ratio to local | local loop | gather: M requests/s | ratio to local |")
print("|---|---|---|---|---|---|---|---|---|---|")
for np in ranks:
    b = [rates("batch", np, i) for i in range(runs)]
    r = [rates("record", np, i) for i in range(runs)]
    col = lambda runs_, m: [x[m] for x in runs_]
    ratio = lambda runs_, m: [x[m] / x["local"] for x in runs_]
    print(f"| {np} | {rng(col(b, 'courier'))} | {med(ratio(b, 'courier'))} "
          f"| {rng(col(r, 'courier'))} | {med(ratio(r, 'courier'))} "
          f"| {rng(col(b, 'alltoallv'))} | {med(ratio(b, 'alltoallv'))} "
          f"| {rng(col(b, 'local'))} | {rng(col(b, 'gather'))} | {med(ratio(b, 'gather'))} |")
PY
