#!/bin/sh
# Usage: calibrate.sh MPIRUN COURIER_CALIBRATE HELLO
# courier-calibrate writes a file (at 2 ranks on one node, and at 3 ranks on virtual
# nodes of 1, which measures between nodes too); a job under COURIER_ROUTE=auto
# chooses with it and says so; a file of another format version, or one that is not
# there, ends the job with one line naming it and a non-zero status.
set -u
mpirun=$1 calibrate=$2 hello=$3
dir=$(mktemp -d "${TMPDIR:-/tmp}/courier-calibrate-XXXXXX")
trap 'rm -rf "$dir"' EXIT
fail() { echo "calibrate.sh: $*" >&2; exit 1; }

"$mpirun" -np 2 "$calibrate" --output "$dir/one.txt" --hops 200 --records 20000 >"$dir/out" 2>&1 ||
    { cat "$dir/out"; fail "courier-calibrate at 2 ranks failed"; }
grep -q 'within a node (measured)' "$dir/out" || { cat "$dir/out"; fail "nothing measured within the node"; }
grep -q '^courier-tune 1$' "$dir/one.txt" || fail "no version line in the file"
COURIER_NODE_SIZE=1 "$mpirun" -np 3 "$calibrate" --output "$dir/two.txt" --hops 200 \
    --records 20000 >"$dir/out" 2>&1 || { cat "$dir/out"; fail "courier-calibrate over virtual nodes failed"; }
grep -q 'between nodes (measured)' "$dir/out" || { cat "$dir/out"; fail "nothing measured between nodes"; }

COURIER_ROUTE=auto COURIER_VERBOSE=1 COURIER_TUNE_FILE="$dir/two.txt" COURIER_NODE_SIZE=1 \
    "$mpirun" -np 3 "$hello" >"$dir/out" 2>&1 || { cat "$dir/out"; fail "hello with the file failed"; }
grep -q "with the costs of $dir/two.txt" "$dir/out" || { cat "$dir/out"; fail "the choice does not name the file"; }

sed 's/^courier-tune 1$/courier-tune 99/' "$dir/one.txt" >"$dir/old.txt"
for bad in "old.txt:format version 99" "missing.txt:cannot read the calibration"; do
    file=${bad%%:*} why=${bad#*:}
    if COURIER_ROUTE=auto COURIER_TUNE_FILE="$dir/$file" "$mpirun" -np 2 "$hello" >"$dir/out" 2>&1; then
        cat "$dir/out"; fail "hello with $file succeeded"
    fi
    lines=$(grep -c "COURIER_TUNE_FILE: $dir/$file: .*$why" "$dir/out")
    [ "$lines" = 1 ] || { cat "$dir/out"; fail "$file: $lines lines say '$why', expected 1"; }
done
echo "calibrate.sh: the file is written, used and refused as it should be"
