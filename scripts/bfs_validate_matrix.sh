#!/usr/bin/env bash
# BFS validation over scales, rank counts and routes (docs/graph.md). Every run
# validates each search; the script prints one
# line per run and exits non-zero if any run fails.
#
#   scripts/bfs_validate_matrix.sh [BUILD_DIR]
#   env: SCALES ("16 17 18 19 20"), RANKS ("1 2 3 4 8"),
#        ROUTES ("direct nr nlnr grid hypercube"), NODE (2), ROOTS (4),
#        ALGORITHMS ("hybrid levels")
set -uo pipefail
build=${1:-build}
mpirun="$(dirname "$0")/mpirun.sh"  # Open MPI settings for root and oversubscription
failed=0 runs=0
for scale in ${SCALES:-16 17 18 19 20}; do
    for np in ${RANKS:-1 2 3 4 8}; do
        for route in ${ROUTES:-direct nr nlnr grid hypercube}; do
          for algo in ${ALGORITHMS:-hybrid levels}; do
            [ "$np" -eq 1 ] && [ "$route" != direct ] && continue # one rank: nothing to route
            runs=$((runs + 1))
            line=$("$mpirun" -np "$np" "$build/apps/bfs" --scale "$scale" --roots "${ROOTS:-4}" --quiet \
                --route "$route" --node-size "${NODE:-2}" --algorithm "$algo" 2>&1)
            rc=$?
            verdict=$(grep -o "validation: .*" <<<"$line")
            teps=$(grep -o "harmonic mean [0-9.]* M" <<<"$line")
            printf "scale %2d  ranks %d  route %-9s  %-6s  %s  %s  %s\n" "$scale" "$np" "$route" \
                "$algo" "${verdict:-no verdict}" "$teps" "$([ $rc -eq 0 ] && echo ok || echo FAILED)"
            [ $rc -eq 0 ] || { failed=$((failed + 1)); echo "$line" | tail -5; }
          done
        done
    done
done
echo "bfs_validate_matrix: $((runs - failed)) of $runs runs valid"
[ "$failed" -eq 0 ]
