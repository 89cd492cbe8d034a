#!/usr/bin/env bash
# The README's histogram table: Courier against MPI_Alltoallv at several rank
# counts, RUNS runs each (every run the median of 5 repetitions), printed as ranges.
#
#   scripts/bench_histogram.sh [BUILD_DIR] [RUNS] [RANKS...]
set -euo pipefail
build=${1:-build}
runs=${2:-3}
shift $(( $# > 2 ? 2 : $# ))
ranks=("$@")
[ ${#ranks[@]} -eq 0 ] && ranks=(2 4 8)
mpirun="$(dirname "$0")/mpirun.sh"  # Open MPI settings for root and oversubscription
csv=$(mktemp)
trap 'rm -f "$csv"' EXIT

for ((i = 0; i < runs; i++)); do
    for np in "${ranks[@]}"; do
        "$mpirun" -np "$np" "$build/apps/histogram" --reps 5 --csv "$csv" >/dev/null
    done
done

echo "| ranks | Courier, M updates/s | alltoallv, M updates/s | courier / alltoallv |"
echo "|---|---|---|---|"
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
{
    key = $col["ranks"]; run = int(n[key, $1]++)
    rate[key, $1, run] = $col["updates_per_s"] / 1e6
    if (!(key in seen)) { seen[key] = 1; order[++nk] = key }
}
function range(lo, hi) { return lo == hi ? sprintf("%.0f", lo) : sprintf("%.0f-%.0f", lo, hi) }
END {
    for (k = 1; k <= nk; k++) {
        key = order[k]
        clo = alo = rlo = 1e18; chi = ahi = rhi = 0
        for (r = 0; r < n[key, "courier"]; r++) {
            c = rate[key, "courier", r]; a = rate[key, "alltoallv", r]; q = c / a
            if (c < clo) clo = c; if (c > chi) chi = c
            if (a < alo) alo = a; if (a > ahi) ahi = a
            if (q < rlo) rlo = q; if (q > rhi) rhi = q
        }
        printf "| %s | %s | %s | %.2f-%.2f |\n", key, range(clo, chi), range(alo, ahi), rlo, rhi
    }
}' "$csv"
