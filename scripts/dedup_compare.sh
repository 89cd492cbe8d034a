#!/usr/bin/env bash
# Merging on and off, side by side in one script (docs/dedup.md): the histogram's
# skewed updates (plain 8-byte updates vs --combine) and reads (gather vs gather
# --combine, requests merged and coalesced), alternating A B A B, ROUNDS times, at
# NP ranks under a route with virtual nodes. Prints, per run, the records or
# requests that reach their owners, the most on one rank, the merges, and the rate.
#
#   scripts/dedup_compare.sh [BUILD_DIR] [ROUNDS]     (default: build 2)
#   NP=8 ROUTE=hypercube NODE_SIZE=2 SKEW=4 UPDATES=1M  (the defaults)
#   WORKLOADS="updates reads" (the default; one of them alone alternates its two runs)
set -euo pipefail
build=${1:-build}
rounds=${2:-2}
np=${NP:-8}
route=${ROUTE:-hypercube}
node_size=${NODE_SIZE:-2}
skew=${SKEW:-4}
updates=${UPDATES:-1M}
workloads=${WORKLOADS:-updates reads}
mpirun="$(dirname "$0")/mpirun.sh"

run() { # mode [--combine] -> "rate reached most merged_src merged_hops coalesced"
    local mode=$1
    shift
    "$mpirun" -np "$np" "$build/apps/histogram" --route "$route" --node-size "$node_size" \
        --skew "$skew" --updates "$updates" --reps 1 --mode "$mode" "$@" |
        awk -v mode="$mode" '
            /verified/ && $1 == mode {for (i = 1; i <= NF; i++) if ($i == "M") r = $(i - 1)}
            /VERIFICATION FAILED/ {bad = 1}
            mode == "courier" && /courier traffic/ {
                for (i = 1; i <= NF; i++) {
                    if ($i == "handled" && $(i + 1) == "(most") {h = $(i - 2); m = $(i + 5)}
                    if ($i == "merged" && $(i + 1) == "at") s = $(i - 1)
                    if ($i == "hops") p = $(i - 2)
                }
                c = 0
            }
            mode == "gather" && /gather requests:/ {
                for (i = 1; i <= NF; i++) {
                    if ($i == "reached") h = $(i - 1)
                    if ($i == "rank") m = $(i + 1)
                    if ($i == "merged" && $(i + 1) == "at") s = $(i - 1)
                    if ($i == "hops,") p = $(i - 2)
                    if ($i == "coalesced") c = $(i - 1)
                }
            }
            END {if (bad) {print "VERIFICATION FAILED"; exit 1}
                 gsub(/[);,]/, "", m); print r, h, m, s, p, c}'
}

echo "histogram on $np ranks, --route $route --node-size $node_size --skew $skew --updates $updates ($(date -u +%F), $(hostname))"
echo
echo "| workload | merging | reach owners | most on a rank | merged at source | merged at hops | coalesced | M per s |"
echo "|---|---|---|---|---|---|---|---|"
for ((k = 0; k < rounds; k++)); do
    if [[ " $workloads " == *" updates "* ]]; then
        read -r r h m s p c < <(run courier)
        echo "| updates | none | $h | $m | $s | $p | - | $r |"
        read -r r h m s p c < <(run courier --combine)
        echo "| updates | combining (sum) | $h | $m | $s | $p | - | $r |"
    fi
    if [[ " $workloads " == *" reads "* ]]; then
        read -r r h m s p c < <(run gather)
        echo "| reads | none | $h | $m | - | - | - | $r |"
        read -r r h m s p c < <(run gather --combine)
        echo "| reads | merged + coalesced | $h | $m | $s | $p | $c | $r |"
    fi
done
