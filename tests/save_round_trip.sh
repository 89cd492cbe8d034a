#!/bin/sh
# Usage: save_round_trip.sh MPIRUN TEST_SAVE P Q
# Saves every container and a darray at P ranks, loads them at Q ranks and checks
# the exact contents (tests/mpi/test_save.c); then, with a fifth argument "bad", an
# overwrite at Q ranks (loaded again) and the damaged saves at Q ranks.
set -e
mpirun=$1 exe=$2 p=$3 q=$4
dir=$(mktemp -d "${TMPDIR:-/tmp}/courier-save-XXXXXX")
trap 'rm -rf "$dir"' EXIT
"$mpirun" -np "$p" "$exe" save "$dir"
"$mpirun" -np "$q" "$exe" load "$dir"
if [ "${5:-}" = bad ]; then
    # saved over at Q ranks: the old parts are gone, the contents the same
    if [ "$p" != "$q" ]; then
        "$mpirun" -np "$q" "$exe" overwrite "$dir"
        for kind in map set counting_set bag disjoint_set darray; do
            parts=$(ls "$dir/$kind" | grep -c '^part-')
            [ "$parts" = "$q" ] || { echo "$kind: $parts part files after an overwrite at $q ranks"; exit 1; }
        done
        "$mpirun" -np "$q" "$exe" load "$dir"
    fi
    mkdir "$dir/bad"
    "$mpirun" -np "$q" "$exe" bad "$dir/bad"
fi
