#!/usr/bin/env bash
# Validation of apps/boruvka and apps/cc over scales, rank counts, lock-step routes
# and aggregations, and the asynchronous designs (docs/graph.md). Every run checks
# itself (--validate yes): Boruvka against a sequential Kruskal, CC against a
# union-find, both also by the distributed invariants. One line per run; exits
# non-zero if any run fails.
#
#   scripts/msf_cc_validate_matrix.sh [BUILD_DIR]
#   env: APPS ("boruvka cc"), SCALES ("16 18"), RANKS ("1 2 3 4 8"),
#        ROUTES ("direct grid hypercube"), AGGREGATIONS ("none hash sort"),
#        ASYNC (1: also Boruvka --mode filter and --mode async, CC --algorithm local
#        and --algorithm label, per route except grid, on virtual nodes of 2 ranks)
set -uo pipefail
build=${1:-build}
mpirun="$(dirname "$0")/mpirun.sh"  # Open MPI settings for root and oversubscription
failed=0 runs=0
run() { # app np label args...
    local app=$1 np=$2 label=$3
    shift 3
    runs=$((runs + 1))
    local out rc
    out=$("$mpirun" -np "$np" "$build/apps/$app" --validate yes "$@" 2>&1)
    rc=$?
    local t
    t=$(grep -o "time [0-9.]* s\|[0-9.]* s$" <<<"$out" | head -1)
    printf "%-8s %-36s ranks %d  %-14s %s\n" "$app" "$label" "$np" "${t:-}" \
        "$([ $rc -eq 0 ] && echo ok || echo FAILED)"
    [ $rc -eq 0 ] || { failed=$((failed + 1)); echo "$out" | tail -5; }
}
for scale in ${SCALES:-16 18}; do
    for np in ${RANKS:-1 2 3 4 8}; do
        for route in ${ROUTES:-direct grid hypercube}; do
            for app in ${APPS:-boruvka cc}; do
                lockstep=(--mode lockstep --aggregation) async=(--mode async) fast=(--mode filter)
                [ "$app" = cc ] && lockstep=(--algorithm sv --aggregation) async=(--algorithm label) fast=(--algorithm local)
                for agg in ${AGGREGATIONS:-none hash sort}; do
                    run "$app" "$np" "scale $scale lock-step $route $agg" --scale "$scale" \
                        --route "$route" "${lockstep[@]}" "$agg"
                done
                if [ "${ASYNC:-1}" = 1 ] && [ "$route" != grid ]; then
                    run "$app" "$np" "scale $scale async $route" --scale "$scale" \
                        "${async[@]}" --route "$route" --node-size 2
                    run "$app" "$np" "scale $scale ${fast[1]} $route" --scale "$scale" \
                        "${fast[@]}" --route "$route" --node-size 2
                fi
            done
        done
    done
done
echo "msf_cc_validate_matrix: $((runs - failed)) of $runs runs valid"
[ "$failed" -eq 0 ]
