#!/bin/sh
# Usage: with_fifo.sh COMMAND [ARGS...]
# Runs COMMAND with each argument that is exactly @FIFO@ replaced by the path of a
# new FIFO (named pipe) that nothing writes to, removed afterwards; exits as COMMAND
# does. A reader that opens the FIFO before checking what it is waits forever (the
# test's timeout then fails it).
set -u
dir=$(mktemp -d "${TMPDIR:-/tmp}/courier-fifo-XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
mkfifo "$dir/fifo" || exit 1
first=1
for arg in "$@"; do
    [ "$first" = 1 ] && set -- && first=0
    if [ "$arg" = @FIFO@ ]; then
        set -- "$@" "$dir/fifo"
    else
        set -- "$@" "$arg"
    fi
done
"$@"
