#!/bin/sh
# Usage: same_lines.sh PATTERN COMMAND1 [ARGS...] -- COMMAND2 [ARGS...]
# Runs both commands; passes if both succeed and print the same, non-empty set of
# lines holding PATTERN (a fixed string), in the same order: e.g. a result that must
# not depend on the route, the buffer size or the timing.
pattern=$1
shift
first=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    first="$first $(printf '%s' "$1" | sed "s/'/'\\\\''/g; s/^/'/; s/\$/'/")"
    shift
done
[ "$1" = "--" ] || { echo "same_lines.sh: no -- between the two commands"; exit 1; }
shift
out1=$(eval "$first" 2>&1) || { printf 'the first command failed:\n%s\n' "$out1"; exit 1; }
out2=$("$@" 2>&1) || { printf 'the second command failed:\n%s\n' "$out2"; exit 1; }
lines1=$(printf '%s\n' "$out1" | grep -F -- "$pattern")
lines2=$(printf '%s\n' "$out2" | grep -F -- "$pattern")
if [ -z "$lines1" ]; then
    printf 'no line holds "%s":\n%s\n' "$pattern" "$out1"
    exit 1
fi
if [ "$lines1" != "$lines2" ]; then
    printf 'the lines holding "%s" differ:\n%s\n---\n%s\n' "$pattern" "$lines1" "$lines2"
    exit 1
fi
printf '%s\n' "$lines1"
