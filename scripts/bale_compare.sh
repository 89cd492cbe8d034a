#!/usr/bin/env bash
# Courier's histogram against bale's (exstack and exstack2) on bale's workload, in
# one run: N updates per rank into 10,000 counters per rank, the updates' owners and
# offsets drawn before the clock starts on both sides (histogram --prepared, as
# bale's histo packs its index array), alternating Courier and bale ROUNDS times at
# each rank count. Courier's local loop (one process, no MPI, the same prepared
# indices) runs with it as the machine's ceiling. Prints every rate and, per rank
# count, the medians and the ratios Courier / exstack2 and Courier / local.
#
# bale is not part of Courier: build it from its public sources (jdevinney/bale,
# bale_classic, over Open MPI's OpenSHMEM: CC=oshcc ./make_bale -s) and name its
# bin folder in BALE_BIN.
#
#   BALE_BIN=DIR scripts/bale_compare.sh [BUILD_DIR] [ROUNDS] [RANKS...]
#   (default: build 3 2; UPDATES=5000000)
#
# At more ranks than cores bale is not a fair baseline: its exstack2 waits by
# spinning, and oversubscribed ranks then take each other's cores (4 ranks on 2
# cores: 2 M updates/s).
set -euo pipefail
build=${1:-build}
rounds=${2:-3}
shift $(($# > 2 ? 2 : $#))
ranks=("$@")
[ ${#ranks[@]} -eq 0 ] && ranks=(2)
updates=${UPDATES:-5000000}
bale=${BALE_BIN:?name the bin folder of a bale_classic build in BALE_BIN}
[ -x "$bale/histo" ] || { echo "bale_compare: no histo program in $bale" >&2; exit 2; }
mpirun="$(dirname "$0")/mpirun.sh"

courier() { # np -> "courier-rate local-rate" (M updates/s)
    "$mpirun" -np "$1" "$build/apps/histogram" --prepared --mode courier,local \
        --updates "$updates" --table $((10000 * $1)) --reps 5 |
        awk '/VERIFICATION FAILED/ {exit 1}
             ($1 == "courier" || $1 == "local") && /verified/ {
                 for (i = 1; i <= NF; i++) if ($i == "M") r[$1] = $(i - 1) }
             END {print r["courier"], r["local"]}'
}

bale_histo() { # np -> "exstack-rate exstack2-rate" (M updates/s)
    # bale prints seconds for all ranks' updates together; it may crash on exit
    # after printing, which is not ours to judge.
    (cd "$bale" && oshrun --oversubscribe -np "$1" ./histo -n "$updates" -T 10000 -M 6 2>&1 || true) |
        awk -v total=$(($1 * updates)) '
            $1 == "Exstack:" {e = total / $2 / 1e6}
            $1 == "Exstack2:" {e2 = total / $2 / 1e6}
            END {printf "%.1f %.1f\n", e, e2}'
}

if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
echo "machine state: $("$mpirun" -np 2 "$build/apps/ring" --laps 2000 | sed -n 's/.*: \([0-9.]* us per hop\).*/ring latency \1/p')"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for ((i = 0; i < rounds; i++)); do
    for np in "${ranks[@]}"; do
        read -r c l < <(courier "$np")
        read -r e e2 < <(bale_histo "$np")
        echo "$np $c $l $e $e2" >>"$dir/rows"
        echo "round $((i + 1)), $np ranks: courier $c, local $l, exstack $e, exstack2 $e2 M updates/s"
    done
done
python3 - "$dir/rows" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
print("| ranks | Courier | local loop | exstack | exstack2 | Courier / exstack2 | Courier / local |")
print("|---|---|---|---|---|---|---|")
for np in dict.fromkeys(r[0] for r in rows):
    c, l, e, e2 = (statistics.median(float(r[k]) for r in rows if r[0] == np) for k in (1, 2, 3, 4))
    ratios = [float(r[1]) / float(r[4]) for r in rows if r[0] == np]
    local = [float(r[1]) / float(r[2]) for r in rows if r[0] == np]
    print(f"| {np} | {c:.0f} | {l:.0f} | {e:.0f} | {e2:.0f} | {statistics.median(ratios):.2f} "
          f"({min(ratios):.2f}-{max(ratios):.2f}) | {statistics.median(local):.3f} |")
PY
