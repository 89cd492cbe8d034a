#!/bin/sh
# Usage: wordcount_resume.sh MPIRUN WORDCOUNT FILE...
# Counts FILE... at 3 ranks and saves the counts; a second run at 2 ranks loads them
# and counts the first file again: the counts must add up to both; a third save into
# the same directory without --overwrite must be refused before counting; a run with
# --load alone takes the save's mode (file words) and adds nothing to its counts.
set -e
mpirun=$1 app=$2
shift 2
dir=$(mktemp -d "${TMPDIR:-/tmp}/courier-wordcount-XXXXXX")
trap 'rm -rf "$dir"' EXIT
"$mpirun" -np 3 "$app" --input "$@" --save "$dir/counts" | grep -F "every word's count equals a recount"
"$mpirun" -np 2 "$app" --input "$1" --load "$dir/counts" --save "$dir/counts" --overwrite |
    grep -F "the counts add up to the words loaded and read"
if "$mpirun" -np 2 "$app" --input "$1" --save "$dir/counts" >"$dir/out" 2>&1; then
    echo "a save over a save was not refused"; exit 1
fi
grep -F "holds a save already" "$dir/out"
# --load alone: the save says its words are of files, so none are generated and the
# counts are the ones saved
"$mpirun" -np 3 "$app" --load "$dir/counts" --top 3 >"$dir/out" 2>&1 || { cat "$dir/out"; exit 1; }
grep -F "0 input paths" "$dir/out" && grep -F "the counts add up to the words loaded and read" "$dir/out"
