#!/usr/bin/env bash
# Boruvka validation over scales, rank counts, lock-step routes and aggregations,
# and the asynchronous mode (issue "Boruvka minimum spanning forest and connected
# components ...", done-when list). Every run is checked against a sequential
# Kruskal by the app (--validate yes); the script prints one line per run and exits
# non-zero if any run fails.
#
#   scripts/boruvka_validate_matrix.sh [BUILD_DIR]
#   env: SCALES ("16 18"), RANKS ("1 2 3 4 8"), ROUTES ("direct grid hypercube"),
#        AGGREGATIONS ("none hash sort"), ASYNC (1: also --mode async per route)
set -uo pipefail
build=${1:-build}
mpirun="$(dirname "$0")/mpirun.sh"  # Open MPI settings for root and oversubscription
failed=0 runs=0
run() { # np label args...
    local np=$1 label=$2
    shift 2
    runs=$((runs + 1))
    local out rc
    out=$("$mpirun" -np "$np" "$build/apps/boruvka" --validate yes "$@" 2>&1)
    rc=$?
    local t
    t=$(grep -o "time [0-9.]* s" <<<"$out")
    printf "%-44s ranks %d  %-12s %s\n" "$label" "$np" "${t:-}" "$([ $rc -eq 0 ] && echo ok || echo FAILED)"
    [ $rc -eq 0 ] || { failed=$((failed + 1)); echo "$out" | tail -5; }
}
for scale in ${SCALES:-16 18}; do
    for np in ${RANKS:-1 2 3 4 8}; do
        for route in ${ROUTES:-direct grid hypercube}; do
            for agg in ${AGGREGATIONS:-none hash sort}; do
                run "$np" "scale $scale lock-step $route $agg" --scale "$scale" --route "$route" --aggregation "$agg"
            done
            [ "${ASYNC:-1}" = 1 ] && [ "$route" != grid ] &&
                run "$np" "scale $scale async $route" --scale "$scale" --mode async --route "$route" --node-size 2
        done
    done
done
echo "boruvka_validate_matrix: $((runs - failed)) of $runs runs valid"
[ "$failed" -eq 0 ]
