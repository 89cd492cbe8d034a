#!/bin/sh
# Usage: save_round_trip.sh MPIRUN TEST_SAVE P Q
# Saves every container and a darray at P ranks, loads them at Q ranks and checks
# the exact contents (tests/mpi/test_save.c); then the damaged saves at Q ranks.
set -e
mpirun=$1 exe=$2 p=$3 q=$4
dir=$(mktemp -d "${TMPDIR:-/tmp}/courier-save-XXXXXX")
trap 'rm -rf "$dir"' EXIT
"$mpirun" -np "$p" "$exe" save "$dir"
"$mpirun" -np "$q" "$exe" load "$dir"
if [ "${5:-}" = bad ]; then
    mkdir "$dir/bad"
    "$mpirun" -np "$q" "$exe" bad "$dir/bad"
fi
