#!/bin/sh
# Usage: expect_fail.sh PATTERN COMMAND [ARGS...]
# Passes if COMMAND exits non-zero and its output contains PATTERN (a fixed string).
pattern=$1
shift
out=$("$@" 2>&1)
rc=$?
if [ "$rc" -eq 0 ]; then
    printf 'expected a failure, but the command succeeded:\n%s\n' "$out"
    exit 1
fi
if ! printf '%s\n' "$out" | grep -qF -- "$pattern"; then
    printf 'exit status %d, but the expected message "%s" is missing:\n%s\n' "$rc" "$pattern" "$out"
    exit 1
fi
printf 'failed as expected (exit %d): %s\n' "$rc" "$(printf '%s\n' "$out" | grep -F -- "$pattern" | head -n 1)"
