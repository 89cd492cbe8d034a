#!/usr/bin/env bash
# Compare the two receive designs (COURIER_RECV=probe|prepost) in one run:
# histogram throughput (8-byte updates, default buffers) and ring latency
# (one message per hop). The modes alternate, so machine noise hits both alike.
# Every buffer goes through MPI (COURIER_SHM=off): on one node the rings in shared
# memory would otherwise carry them, and no receive mode would be measured.
#
#   scripts/bench_recv_modes.sh [BUILD_DIR] [ROUNDS]
set -euo pipefail
build=${1:-build}
rounds=${2:-3}
mpirun="$(dirname "$0")/mpirun.sh"  # Open MPI settings for root and oversubscription
export COURIER_SHM=off
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for ((i = 0; i < rounds; i++)); do
    for np in 2 4 8; do
        for mode in probe prepost; do
            COURIER_RECV=$mode "$mpirun" -np $np "$build/apps/histogram" --mode courier --reps 3 \
                --csv "$tmp/hist_$mode.csv" >/dev/null
        done
    done
    for np in 2 4; do
        for mode in probe prepost; do
            COURIER_RECV=$mode "$mpirun" -np $np "$build/apps/ring" --laps 2000 \
                --csv "$tmp/ring_$mode.csv" >/dev/null
        done
    done
done

median() { sort -g | awk '{v[NR]=$1} END{print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", b / a}'; }
echo "| workload | ranks | probe | prepost | prepost / probe |"
echo "|---|---|---|---|---|"
for np in 2 4 8; do
    p=$(awk -F, -v n=$np 'NR>1 && $2==n {print $7/1e6}' "$tmp/hist_probe.csv" | median)
    q=$(awk -F, -v n=$np 'NR>1 && $2==n {print $7/1e6}' "$tmp/hist_prepost.csv" | median)
    printf '| histogram, M updates/s | %d | %.1f | %.1f | %s |\n' $np "$p" "$q" "$(ratio "$p" "$q")"
done
for np in 2 4; do
    p=$(awk -F, -v n=$np 'NR>1 && $1==n {print $7}' "$tmp/ring_probe.csv" | median)
    q=$(awk -F, -v n=$np 'NR>1 && $1==n {print $7}' "$tmp/ring_prepost.csv" | median)
    printf '| ring, us per hop | %d | %.2f | %.2f | %s |\n' $np "$p" "$q" "$(ratio "$p" "$q")"
done
