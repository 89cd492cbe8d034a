#!/usr/bin/env bash
# The containers on the histogram's workload, side by side in one run
# (docs/containers.md): Courier's histogram (8-byte updates into a table of K
# counters), the counting set and the summing map (container_bench) with N inserts
# per rank over K keys, alternating A B A B, ROUNDS times, at NP ranks; and, when
# YGM_BENCH names a program built against YGM that takes "KEYS INSERTS" and prints
# "ygm <structure> <M inserts/s>" lines, that too. Prints every rate and, per key
# count, the median of each and its ratio to the histogram's.
#
#   scripts/container_compare.sh [BUILD_DIR] [ROUNDS]   (default: build 3)
#   NP=4 INSERTS=8M KEYS="1000 10M"                       (the defaults)
#   SCRAMBLE=1: the containers insert key i as a 64-bit hash of i (container_bench
#   --scramble, ygm_bench ... scramble; YGM's array is then left out), so that no
#   cache sees consecutive integers; the histogram's indices stay as they are.
#   RESERVE=1: also the counting set and map with their tables sized for the keys
#   first (container_bench --reserve), as rows counting-set-reserved and
#   map-reserved: what a program that knows its key count gets.
# Every round also runs container_bench --structure local-array: the same loop adding
# 1 to a counter of each rank's own array, nothing sent, the floor under any insert
# that loop can call (row local-array).
set -euo pipefail
build=${1:-build}
rounds=${2:-3}
np=${NP:-4}
inserts=${INSERTS:-8M}
keys_list=${KEYS:-1000 10M}
mpirun="$(dirname "$0")/mpirun.sh"

histogram() { # keys -> M updates/s
    "$mpirun" -np "$np" "$build/apps/histogram" --mode courier --table "$1" \
        --updates "$inserts" --reps 1 |
        awk '$1 == "courier" && /verified/ {for (i = 1; i <= NF; i++) if ($i == "M") print $(i - 1)}
             /VERIFICATION FAILED/ {exit 1}'
}

containers() { # keys [suffix [flags]] -> "counting-set rate" and "map rate" lines
    "$mpirun" -np "$np" "$build/apps/container_bench" --keys "$1" --inserts "$inserts" \
        --reps 1 --validate no ${SCRAMBLE:+--scramble} ${3:-} |
        awk -v s="${2:-}" '/verified/ {print $1 s, $4} /WRONG/ {exit 1}'
}

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

echo "containers against the histogram on $np ranks, $inserts inserts per rank${SCRAMBLE:+, keys scrambled} ($(date -u +%F), $(hostname))"
for keys in $keys_list; do
    tmp=$(mktemp -d)
    for ((r = 0; r < rounds; r++)); do
        histogram "$keys" >> "$tmp/histogram"
        containers "$keys" | while read -r name rate; do echo "$rate" >> "$tmp/$name"; done
        containers "$keys" "" "--structure local-array" |
            while read -r name rate; do echo "$rate" >> "$tmp/$name"; done
        if [[ "${RESERVE:-0}" = 1 ]]; then
            containers "$keys" -reserved --reserve |
                while read -r name rate; do echo "$rate" >> "$tmp/$name"; done
        fi
        if [[ -n "${YGM_BENCH:-}" ]]; then
            "$mpirun" -np "$np" "$YGM_BENCH" "$keys" "$inserts" ${SCRAMBLE:+scramble} |
                awk '$1 == "ygm" {print $2, $3}' |
                while read -r name rate; do echo "$rate" >> "$tmp/ygm-$name"; done
        fi
    done
    h=$(median < "$tmp/histogram")
    echo
    echo "K = $keys keys (M inserts/s; each round's figure, then the median and its ratio to the histogram's)"
    echo "| structure | rounds | median | / histogram |"
    echo "|---|---|---|---|"
    for f in histogram local-array counting-set map counting-set-reserved map-reserved \
        $(cd "$tmp" && ls | grep '^ygm-' || true); do
        [[ -f "$tmp/$f" ]] || continue
        m=$(median < "$tmp/$f")
        echo "| $f | $(paste -sd' ' "$tmp/$f") | $m | $(awk -v a="$m" -v b="$h" 'BEGIN {printf "%.2f", a / b}') |"
    done
    rm -rf "$tmp"
done
