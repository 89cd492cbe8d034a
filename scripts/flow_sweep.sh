#!/usr/bin/env bash
# The memory bound of COURIER_FLOW=deep-held, measured (docs/flow_control.md):
#   1. apps/fanout (fanout 4, 16-byte records, 1 KiB buffers, a 4 KiB cap) at depth 8
#      (1000 trees per rank) and depth 10 (100 trees per rank), RUNS runs each, on
#      every rank count of RANKS: records counted, peak per rank against the bound
#      fanout prints for its depth (cr_memory_bound), reliefs, rate;
#   2. the simulated fan-out (fanout 2) at P = 1, 2, 4, 16 and 64, depth 8 and 10,
#      SIM_SEEDS seeds each, ranks up to 10 times slower than others and stalls
#      (test_sim deep with DEEP_SEEDS): every virtual rank within its bound.
#
#   scripts/flow_sweep.sh [BUILD_DIR] [RUNS]     (default: build 5; RANKS=2,
#   TREES="1000 100" (per rank, at depth 8 and 10), SIM_SEEDS=100; SIM=0 skips the
#   simulation). Beyond the cores a run is far slower (4 ranks on 2 cores: TREES="100 10").
set -euo pipefail
build=${1:-build}
runs=${2:-5}
ranks=${RANKS:-2}
read -r trees8 trees10 <<<"${TREES:-1000 100}"
sim_seeds=${SIM_SEEDS:-100}
mpirun="$(dirname "$0")/mpirun.sh"
export COURIER_BUFFER_SIZE=1K COURIER_BUFFER_CAP=4K COURIER_FLOW=deep-held

echo "| ranks | depth | trees per rank | run | records | peak per rank | bound | fullest rank / its bound | parked | reliefs | M records/s |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for np in $ranks; do
    for spec in "8 $trees8" "10 $trees10"; do
        read -r depth trees <<<"$spec"
        for ((i = 1; i <= runs; i++)); do
            out=$("$mpirun" -x COURIER_BUFFER_SIZE -x COURIER_BUFFER_CAP -x COURIER_FLOW -np "$np" \
                "$build/apps/fanout" --depth "$depth" --seeds "$trees")
            awk -v np="$np" -v depth="$depth" -v trees="$trees" -v run="$i" '
                /handled [0-9]+ records/ {exact = ($0 ~ /: exact;/) ? "exact" : "WRONG"
                    for (k = 1; k <= NF; k++) if ($k == "M") rate = $(k - 1)}
                /all at once/ {for (k = 1; k <= NF; k++) {
                    if ($k == "parked") parked = $(k + 1)
                    if ($k == "once") peak = $(k + 1)}}
                /^  reliefs/ {reliefs = $2}
                /deep-held, depth/ {for (k = 1; k <= NF; k++) {
                    if ($k == "depth") {}
                    if ($(k) == "KiB" && $(k + 1) == "at") bound = $(k - 1)
                    if ($k == "at" && $(k + 2) == "of") ratio = $(k + 1)}
                    verdict = ($0 ~ /every rank within/) ? "within" : "ABOVE"}
                END {printf "| %s | %s | %s | %s | %s | %s KiB | %s KiB | %s %s | %s KiB | %s | %s |\n",
                    np, depth, trees, run, exact, peak, bound, ratio, verdict, parked, reliefs, rate}' \
                <<<"$out"
        done
    done
done

if [ "${SIM:-1}" != 0 ]; then
    echo
    echo "simulated, $sim_seeds seeds per point:"
    DEEP_SEEDS=$sim_seeds "$build/tests/test_sim" deep 2>&1 | grep -E "deep-held fan-out P=|FAILED|ERROR" || true
fi
