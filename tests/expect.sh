#!/bin/sh
# Usage: expect.sh fail|fail-once|ok PATTERN COMMAND [ARGS...]
# Runs COMMAND and passes if it exits as expected (non-zero for "fail", zero for
# "ok") and its output contains PATTERN (a fixed string); "fail-once" also wants
# PATTERN on exactly one line (an error printed once, not by every rank);
# "fail-alone" wants it to be all the output but a "Try ... --help" line (nothing
# printed before the error: the options are all checked first).
want=$1
once=0 alone=0
[ "$want" = fail-once ] && want=fail once=1
[ "$want" = fail-alone ] && want=fail once=1 alone=1
pattern=$2
shift 2
out=$("$@" 2>&1)
rc=$?
if [ "$want" = fail ] && [ "$rc" -eq 0 ]; then
    printf 'expected a failure, but the command succeeded:\n%s\n' "$out"
    exit 1
fi
if [ "$want" = ok ] && [ "$rc" -ne 0 ]; then
    printf 'expected success, but the command exited with %d:\n%s\n' "$rc" "$out"
    exit 1
fi
if ! printf '%s\n' "$out" | grep -qF -- "$pattern"; then
    printf 'exit status %d, but the expected text "%s" is missing:\n%s\n' "$rc" "$pattern" "$out"
    exit 1
fi
lines=$(printf '%s\n' "$out" | grep -cF -- "$pattern")
if [ "$once" = 1 ] && [ "$lines" -ne 1 ]; then
    printf 'the expected text "%s" is on %d lines, not once:\n%s\n' "$pattern" "$lines" "$out"
    exit 1
fi
if [ "$alone" = 1 ] && printf '%s\n' "$out" | grep -vF -- "$pattern" | grep -qv '^Try '; then
    printf 'more output than the error "%s":\n%s\n' "$pattern" "$out"
    exit 1
fi
printf 'as expected (exit %d): %s\n' "$rc" "$(printf '%s\n' "$out" | grep -F -- "$pattern" | head -n 1)"
