#!/bin/sh
# An mpirun for the suite's multi-host runs: `hosts_mpirun.sh -np N PROGRAM [ARGS]`
# runs PROGRAM across emulated hosts (scripts/hosts.sh), HOSTS_PER_HOST ranks on each
# ("1,2,1": three hosts of 1, 2 and 1 ranks), which must add up to N; so the tests
# that take an mpirun (expect.sh, save_round_trip.sh) run across hosts unchanged.
set -eu
[ "${1:-}" = -np ] && [ $# -ge 3 ] || { echo "hosts_mpirun.sh: usage: -np N PROGRAM [ARGS]" >&2; exit 2; }
n=$2
shift 2
per=${HOSTS_PER_HOST:?hosts_mpirun.sh: HOSTS_PER_HOST (ranks per host, e.g. 2,2) is not set}
hosts=0 total=0
for c in $(echo "$per" | tr ',' ' '); do hosts=$((hosts + 1)) total=$((total + c)); done
[ "$total" -eq "$n" ] || { echo "hosts_mpirun.sh: HOSTS_PER_HOST=$per gives $total ranks, not $n" >&2; exit 2; }
exec "$(dirname "$0")/../scripts/hosts.sh" --hosts "$hosts" --per-host "$per" "$@"
