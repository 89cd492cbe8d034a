#!/bin/sh
# Usage: calibrate.sh MPIRUN COURIER_CALIBRATE HELLO
# courier-calibrate writes a file (at 2 ranks on one node, and at 3 ranks on virtual
# nodes of 1, which measures between nodes too); a job under COURIER_ROUTE=auto
# chooses with it and says so; a file of another format version, or one that is not
# there, ends the job with one line naming it and a non-zero status; a file measured
# with the processors shared otherwise is used, and COURIER_VERBOSE=1 says so. COURIER_TUNE=
# calibrate measures inside cr_comm_create. With --add, one file holds a calibration
# per shape (2 ranks, 3 ranks) and a job reads its own shape's. COURIER_TUNE=
# calibrate measures inside cr_comm_create and the choice says so; a bad value of
# COURIER_TUNE, or COURIER_TUNE=calibrate with a file too, ends the job with one line.
# The file is read by rank 0 alone: ranks whose environment names another file
# take rank 0's choice.
set -u
mpirun=$1 calibrate=$2 hello=$3
dir=$(mktemp -d "${TMPDIR:-/tmp}/courier-calibrate-XXXXXX")
trap 'rm -rf "$dir"' EXIT
fail() { echo "calibrate.sh: $*" >&2; exit 1; }

"$mpirun" -np 2 "$calibrate" --output "$dir/one.txt" --hops 200 --records 20000 >"$dir/out" 2>&1 ||
    { cat "$dir/out"; fail "courier-calibrate at 2 ranks failed"; }
grep -q 'within a node (measured)' "$dir/out" || { cat "$dir/out"; fail "nothing measured within the node"; }
grep -q '^courier-tune 3$' "$dir/one.txt" || fail "no version line in the file"
# at 2 ranks no route passes a record on: nothing is measured for it
grep -q '^forward 0.000000e+00$' "$dir/one.txt" || fail "a cost of passing on at 2 ranks"
# (500,000 records: alpha from two streams, not from the hop)
COURIER_NODE_SIZE=1 "$mpirun" -np 3 "$calibrate" --output "$dir/two.txt" --hops 200 \
    --records 500000 >"$dir/out" 2>&1 || { cat "$dir/out"; fail "courier-calibrate over virtual nodes failed"; }
grep -q 'between nodes (measured)' "$dir/out" || { cat "$dir/out"; fail "nothing measured between nodes"; }
grep -q 'ns more per record passed on;' "$dir/out" || { cat "$dir/out"; fail "passing on not measured at 3 ranks"; }
grep -q '^forward [0-9]' "$dir/two.txt" || fail "no forward line in the file of 3 ranks"

COURIER_ROUTE=auto COURIER_VERBOSE=1 COURIER_TUNE_FILE="$dir/two.txt" COURIER_NODE_SIZE=1 \
    "$mpirun" -np 3 "$hello" >"$dir/out" 2>&1 || { cat "$dir/out"; fail "hello with the file failed"; }
grep -q "with the costs of $dir/two.txt" "$dir/out" || { cat "$dir/out"; fail "the choice does not name the file"; }
# measured with this job's sharing of the processors: nothing to say about it; with
# another (as if 1000 ranks had shared them), one line says so
! grep -q "was measured with" "$dir/out" || { cat "$dir/out"; fail "a note on sharing for the same shape"; }
sed 's/^machine_ranks .*/machine_ranks 1000/' "$dir/two.txt" >"$dir/shared.txt"
COURIER_ROUTE=auto COURIER_VERBOSE=1 COURIER_TUNE_FILE="$dir/shared.txt" COURIER_NODE_SIZE=1 \
    "$mpirun" -np 3 "$hello" >"$dir/out" 2>&1 || { cat "$dir/out"; fail "hello with another sharing failed"; }
lines=$(grep -c "COURIER_TUNE_FILE $dir/shared.txt was measured with 1000 ranks on" "$dir/out")
[ "$lines" = 1 ] || { cat "$dir/out"; fail "$lines lines on the other sharing, expected 1"; }

# rank 0 reads the file and every rank takes its choice: ranks whose environment
# names another file (here one that is not there) choose as rank 0 does
COURIER_ROUTE=auto COURIER_VERBOSE=1 COURIER_TUNE_FILE="$dir/two.txt" COURIER_NODE_SIZE=1 \
    "$mpirun" -np 3 sh -c 'r=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}
        [ "$r" = 0 ] || export COURIER_TUNE_FILE=/nonexistent/tune.txt; exec "$0"' "$hello" \
    >"$dir/out" 2>&1 || { cat "$dir/out"; fail "ranks with another COURIER_TUNE_FILE did not take rank 0's"; }
grep -q "with the costs of $dir/two.txt" "$dir/out" || { cat "$dir/out"; fail "rank 0's file was not used"; }

# a calibration per shape in one file: each job reads the one of its ranks
for np in 2 3 2; do
    COURIER_NODE_SIZE=1 "$mpirun" -np $np "$calibrate" --add --output "$dir/shapes.txt" --hops 200 \
        --records 20000 >"$dir/out" 2>&1 || { cat "$dir/out"; fail "courier-calibrate --add at $np ranks failed"; }
    grep -q "added to $dir/shapes.txt" "$dir/out" || { cat "$dir/out"; fail "--add at $np ranks did not say so"; }
done
lines=$(grep -c '^courier-tune 3$' "$dir/shapes.txt")
[ "$lines" = 2 ] || { cat "$dir/shapes.txt"; fail "$lines calibrations in the file of two shapes"; }
for np in 2 3; do
    COURIER_ROUTE=auto COURIER_VERBOSE=1 COURIER_TUNE_FILE="$dir/shapes.txt" COURIER_NODE_SIZE=1 \
        "$mpirun" -np $np "$hello" >"$dir/out" 2>&1 || { cat "$dir/out"; fail "hello at $np ranks with the file of shapes failed"; }
    grep -q "with the costs of $dir/shapes.txt (its calibration of $np ranks on" "$dir/out" ||
        { cat "$dir/out"; fail "hello at $np ranks did not read its shape's calibration"; }
    ! grep -q "was measured with" "$dir/out" || { cat "$dir/out"; fail "a note on sharing for its own shape"; }
done

sed 's/^courier-tune 3$/courier-tune 99/' "$dir/one.txt" >"$dir/old.txt"
# --add to a file it cannot read ends with one line and leaves the file as it was
cp "$dir/old.txt" "$dir/keep.txt"
if "$mpirun" -np 2 "$calibrate" --add --output "$dir/keep.txt" --hops 20 --records 1000 >"$dir/out" 2>&1; then
    cat "$dir/out"; fail "--add to a file of another version succeeded"
fi
lines=$(grep -c "keep.txt:[0-9]*: .*format version 99.*without it the file is written anew" "$dir/out")
[ "$lines" = 1 ] || { cat "$dir/out"; fail "--add to a bad file: $lines lines, expected 1"; }
cmp -s "$dir/old.txt" "$dir/keep.txt" || fail "--add changed a file it refused"
for bad in "old.txt:format version 99" "missing.txt:cannot read the calibration"; do
    file=${bad%%:*} why=${bad#*:}
    if COURIER_ROUTE=auto COURIER_TUNE_FILE="$dir/$file" "$mpirun" -np 2 "$hello" >"$dir/out" 2>&1; then
        cat "$dir/out"; fail "hello with $file succeeded"
    fi
    lines=$(grep -c "COURIER_TUNE_FILE: $dir/$file:.*$why" "$dir/out")
    [ "$lines" = 1 ] || { cat "$dir/out"; fail "$file: $lines lines say '$why', expected 1"; }
done
COURIER_TUNE=calibrate COURIER_ROUTE=auto COURIER_BUFFER_SIZE=auto COURIER_VERBOSE=1 \
    COURIER_NODE_SIZE=1 "$mpirun" -np 3 "$hello" >"$dir/out" 2>&1 ||
    { cat "$dir/out"; fail "hello with COURIER_TUNE=calibrate failed"; }
grep -q "COURIER_TUNE=calibrate measured in .* between nodes [0-9.]* us" "$dir/out" ||
    { cat "$dir/out"; fail "COURIER_TUNE=calibrate printed no measurement between nodes"; }
grep -q "with the costs measured now" "$dir/out" || { cat "$dir/out"; fail "the choice does not say it measured"; }
for bad in "COURIER_TUNE=sometimes:COURIER_TUNE='sometimes' is not valid" \
           "COURIER_TUNE_FILE=$dir/one.txt:COURIER_TUNE=calibrate and COURIER_TUNE_FILE"; do
    set=${bad%%:*} why=${bad#*:}
    if env COURIER_TUNE=calibrate COURIER_ROUTE=auto "$set" "$mpirun" -np 2 "$hello" >"$dir/out" 2>&1; then
        cat "$dir/out"; fail "hello with $set succeeded"
    fi
    lines=$(grep -c "$why" "$dir/out")
    [ "$lines" = 1 ] || { cat "$dir/out"; fail "$set: $lines lines say '$why', expected 1"; }
done
echo "calibrate.sh: the file is written, used and refused as it should be; COURIER_TUNE too"
