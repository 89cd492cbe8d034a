#!/usr/bin/env bash
# Courier's graph apps against one good core, on the same graph in the same run
# ("Scalability! But at what COST?", McSherry, Isard and Murray, HotOS 2015).
#
#   scripts/cost.sh BUILD [SCALES] [ROUNDS]       e.g. scripts/cost.sh build "18 20" 3
#
# Builds the baselines of PEERS (default ../shared/peers: the GAP benchmark suite and a
# one-core Kruskal) into BUILD/peers, then for each R-MAT scale (edge factor 16):
#   - writes the graph once (apps/cc --write-graph, 'u v' per line) and runs, round
#     after round, alternating: Courier's cc and bfs on that file at 1, 2 and 4 ranks,
#     GAP's cc (Afforest) and bfs (direction-optimizing) on it at 1 and 2 threads;
#   - Courier's boruvka on the generated graph with weights, and kruskal on its own
#     R-MAT graph of the same scale and edge factor (it has no file input).
# Prints one table: the median over the rounds of the time per run (cc, forest) or per
# search (bfs, 16 roots), the ratio Courier / one core, and the peak memory per rank
# (GAP's and kruskal's from /usr/bin/time when it is there). Every Courier run validates
# its result (the script stops if one fails). Ranks are oversubscribed beyond the cores.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: scripts/cost.sh BUILD [SCALES] [ROUNDS]}
scales=${2:-18}
rounds=${3:-3}
peers=${PEERS:-../shared/peers}
ranks=${RANKS:-"1 2 4"}
roots=${ROOTS:-16}
[ -d "$peers/gapbs" ] && [ -f "$peers/kruskal.c" ] ||
    { echo "cost.sh: no baselines in $peers (set PEERS)" >&2; exit 2; }
work=$build/peers
mkdir -p "$work"
if [ ! -x "$work/gapbs/cc" ] || [ ! -x "$work/gapbs/bfs" ]; then
    rm -rf "$work/gapbs"
    cp -r "$peers/gapbs" "$work/gapbs"
    make -s -C "$work/gapbs" bfs cc >/dev/null
fi
[ -x "$work/kruskal" ] || cc -O3 -o "$work/kruskal" "$peers/kruskal.c"
ninja -C "$build" apps/cc apps/bfs apps/boruvka >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# courier APP NP ARGS...: the app's time (cc: the algorithm; bfs: mean per search;
# boruvka: the forest) and its peak memory per rank in MiB, after checking that it
# validated.
courier() {
    local app=$1 np=$2
    shift 2
    local out
    out=$(scripts/mpirun.sh -np "$np" "$build/apps/$app" "$@" 2>&1) || {
        printf 'cost.sh: %s at %s ranks failed:\n%s\n' "$app" "$np" "$out" >&2
        exit 1
    }
    local t
    case $app in
    cc)
        grep -q "validated against union-find" <<<"$out" || { echo "cost.sh: cc not validated" >&2; exit 1; }
        t=$(sed -n 's/.*rounds, \([0-9.]*\) s$/\1/p' <<<"$out") ;;
    bfs)
        grep -q "validation: $roots of $roots searches valid" <<<"$out" || { echo "cost.sh: bfs not validated" >&2; exit 1; }
        t=$(sed -n 's/.*time per search: mean \([0-9.]*\) s$/\1/p' <<<"$out") ;;
    boruvka)
        grep -q "validated against Kruskal" <<<"$out" || { echo "cost.sh: boruvka not validated" >&2; exit 1; }
        t=$(sed -n 's/^  time \([0-9.]*\) s.*/\1/p' <<<"$out") ;;
    esac
    echo "$t $(sed -n 's/.*peak memory per rank \([0-9.]*\) MiB.*/\1/p' <<<"$out" | head -1)"
}

# peak MiB of a one-process baseline: its maximum resident set from /usr/bin/time
# (KiB in FILE), or '-' without it.
timed=()
[ -x /usr/bin/time ] && timed=(/usr/bin/time -f 'MAXRSS %M' -o "$tmp/rss")
rss_mib() { [ -s "$tmp/rss" ] && awk '/^MAXRSS/ {printf "%.1f", $2 / 1024}' "$tmp/rss" || echo -; }

# gap APP THREADS FILE: GAP's average time per trial and its peak MiB.
gap() {
    rm -f "$tmp/rss"
    local t
    t=$(OMP_NUM_THREADS=$2 "${timed[@]}" "$work/gapbs/$1" -f "$3" -s \
        -n "$( [ "$1" = bfs ] && echo "$roots" || echo 3)" | sed -n 's/^Average Time: *\([0-9.]*\)$/\1/p')
    echo "$t $(rss_mib)"
}

median() {
    sort -g | awk '{v[NR] = $1} END {print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}

printf '| scale | program | runs | time (median of %s) | / one core | peak memory per rank |\n|---|---|---|---|---|---|\n' "$rounds"
for s in $scales; do
    graph=$tmp/rmat$s.el
    scripts/mpirun.sh -np 1 "$build/apps/cc" --scale "$s" --write-graph "$graph" --validate no >/dev/null
    [ -s "$graph" ] || { echo "cost.sh: could not write the scale-$s graph" >&2; exit 1; }
    : >"$tmp/results"
    # record PROGRAM WHO COMMAND...: one timing; a failed or empty one stops the script
    record() {
        local prog=$1 who=$2 t
        shift 2
        t=$("$@")
        [ -n "${t%% *}" ] || { echo "cost.sh: no time from $who ($prog)" >&2; exit 1; }
        echo "$prog $who $t" >>"$tmp/results"
    }
    kruskal_time() {
        rm -f "$tmp/rss"
        echo "$("${timed[@]}" "$work/kruskal" "$1" | sed -n 's/.*kruskal \([0-9.]*\) s$/\1/p') $(rss_mib)"
    }
    for round in $(seq "$rounds"); do
        for np in $ranks; do record cc "courier-$np" courier cc "$np" --graph "$graph" --validate yes; done
        for t in 1 2; do record cc "gap-$t" gap cc "$t" "$graph"; done
        for np in $ranks; do
            record bfs "courier-$np" courier bfs "$np" --graph "$graph" --roots "$roots" --quiet
        done
        for t in 1 2; do record bfs "gap-$t" gap bfs "$t" "$graph"; done
        for np in $ranks; do record msf "courier-$np" courier boruvka "$np" --scale "$s" --validate yes; done
        record msf kruskal-1 kruskal_time "$s"
    done
    for prog in cc bfs msf; do
        base=$(awk -v p="$prog" '$1 == p && ($2 == "gap-1" || $2 == "kruskal-1") {print $3}' "$tmp/results" | median)
        for who in $(awk -v p="$prog" '$1 == p {print $2}' "$tmp/results" | sort -u); do
            t=$(awk -v p="$prog" -v w="$who" '$1 == p && $2 == w {print $3}' "$tmp/results" | median)
            mem=$(awk -v p="$prog" -v w="$who" '$1 == p && $2 == w && $4 != "-" {print $4}' "$tmp/results" | sort -g | tail -1)
            awk -v s="$s" -v p="$prog" -v w="$who" -v t="$t" -v b="$base" -v mem="${mem:--}" \
                'BEGIN {printf "| %s | %s | %s | %.4f s | %.2f | %s MiB |\n", s, p, w, t, t / b, mem}'
        done
    done
done
echo
echo "cc and bfs: the same graph (R-MAT, edge factor 16, 'u v' file) for Courier and GAP;"
echo "msf: Courier's boruvka (filter) on its generated weighted graph, kruskal on its own R-MAT"
echo "graph of the same scale. bfs: time per search, $roots roots; Courier counts one search"
echo "from the first visit to the last, GAP its trial. Peak memory: the largest resident set"
echo "of a Courier rank over the rounds (the app's own figure, before its checks gather;"
echo "bfs after its validations), and of the whole GAP or kruskal process (/usr/bin/time)."
