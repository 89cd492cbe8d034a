#!/usr/bin/env bash
# The README's routing table: the same histogram workload under every route, on
# NP ranks grouped into virtual nodes of NODE ranks, RUNS runs of 3 repetitions each.
# Throughput is a range over runs, the ratio to direct is taken within each run; the
# traffic columns come from the last run (they barely vary).
#
#   scripts/bench_routes.sh [BUILD_DIR] [RUNS]
#   env: NP (default 8), NODE (default 2), ROUTES (default "direct nr nlnr grid hypercube"),
#        HIST_ARGS (extra histogram flags, default "--updates 1M")
set -euo pipefail
build=${1:-build}
runs=${2:-3}
np=${NP:-8}
node=${NODE:-2}
routes=(${ROUTES:-direct nr nlnr grid hypercube})
hist_args=(${HIST_ARGS:---updates 1M})
mpirun="$(dirname "$0")/mpirun.sh"  # Open MPI settings for root and oversubscription
csv=$(mktemp)
trap 'rm -f "$csv"' EXIT

for ((i = 0; i < runs; i++)); do
    for r in "${routes[@]}"; do
        "$mpirun" -np "$np" "$build/apps/histogram" --mode courier --reps 3 --route "$r" \
            --node-size "$node" --csv "$csv" "${hist_args[@]}" >/dev/null
    done
done

echo "histogram ${hist_args[*]}, $np ranks as virtual nodes of $node, $runs run(s)"
echo
echo "| route | M updates/s | ratio to direct | MPI sends/rank max | mean | partners/rank max | mean | off-node partners max | MiB on node | MiB off node | records forwarded |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
awk -F, -v nroutes=${#routes[@]} '
NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
{
    row = NR - 2; run = int(row / nroutes); r = $col["route"]
    if (!(r in seen)) { seen[r] = 1; order[++nr] = r }
    rate[r, run] = $col["updates_per_s"] / 1e6; runs = run + 1
    line[r] = $0
}
function range(lo, hi, fmt) { return sprintf(fmt, lo) == sprintf(fmt, hi) ? sprintf(fmt, lo) : sprintf(fmt "-" fmt, lo, hi) }
END {
    for (k = 1; k <= nr; k++) {
        r = order[k]; lo = qlo = 1e18; hi = qhi = 0
        for (u = 0; u < runs; u++) {
            x = rate[r, u]; q = x / rate[order[1], u]
            if (x < lo) lo = x; if (x > hi) hi = x
            if (q < qlo) qlo = q; if (q > qhi) qhi = q
        }
        split(line[r], f, ",")
        printf "| %s | %s | %s | %d | %.1f | %d | %.2f | %d | %.1f | %.1f | %.2fM |\n", r,
            range(lo, hi, "%.1f"), range(qlo, qhi, "%.2f"),
            f[col["mpi_sends_max"]], f[col["mpi_sends_mean"]], f[col["partners_max"]],
            f[col["partners_mean"]], f[col["off_node_partners_max"]],
            f[col["bytes_on_node"]] / 1048576, f[col["bytes_off_node"]] / 1048576,
            f[col["forwarded"]] / 1e6
    }
}' "$csv"
