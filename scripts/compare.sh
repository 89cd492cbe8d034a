#!/usr/bin/env bash
# Courier against every peer, in one run, alternating round after round; prints the
# Markdown table that docs/performance.md publishes.
#
#   scripts/compare.sh BUILD [--quick | --full | --smoke] [--blocks LIST]
#
#   --quick  (default) about 10 minutes on a 2-core machine: 3 rounds, 2 and 4 ranks,
#            graphs of scale 18
#   --full   5 rounds, 2, 4 and 8 ranks, graphs of scale 18 (Courier's graph apps at
#            1, 2 and 4 ranks) and 20 (at 2 ranks): about 20 minutes without the
#            kernels block, well over an hour with it (triangle counting at scale 20)
#   --smoke  every block at tiny sizes, one round: checks that the script, the apps'
#            output and the peers' output still fit together (part of the test suite)
#   --blocks LIST  only these blocks, comma-separated: histogram, gather, graph,
#            kernels, containers, coll, merging (default all)
#
# Environment: PEERS (default ../shared/peers: GAP, bale_classic, kruskal.c); YGM_SRC
# (a checkout of YGM, github.com/LLNL/ygm; default BUILD/peers/ygm-src when present:
# without it the YGM rows are skipped with a line saying so); KEEP=FILE keeps the raw
# figures (one tab-separated line per run).
#
# The peers are built once into BUILD/peers: GAP's kernels (make), kruskal (cc -O3),
# bale_classic's apps over Open MPI's OpenSHMEM (oshcc; needs autoconf, automake and
# libtool), YGM's benchmark (scripts/ygm/build.sh). A peer that cannot be built is
# skipped with a line saying why; Courier's rows still run.
#
# Blocks (each round runs Courier and its peer one after the other, so both see the
# same state of the machine; the local loop runs once per round of every block as the
# marker of that state, in the last column):
#   histogram   bale's histogram: 5,000,000 8-byte updates per rank into 10,000
#               counters per rank, owners and offsets drawn before the clock
#               (histogram --prepared) against bale's histo -M 14 (exstack, exstack2,
#               conveyors)
#   gather      bale's index gather, same sizes: histogram --mode gather against ig
#   graph       cc, bfs (16 roots) on one R-MAT file (edge factor 16) against GAP's cc
#               and bfs at 1 and 2 threads; boruvka on its generated weighted graph
#               against kruskal on its own R-MAT graph of the same scale; peak memory
#               per rank against GAP's and kruskal's process
#   kernels     GAP's other four kernels (sssp, pagerank, tc, bc) on the same R-MAT
#               file (sssp: its weighted form, weights 1 to 255, GAP's delta 2), Courier
#               (the simple graph, as GAP builds it; 3 trials, every one validated)
#               against GAP at 1 and 2 threads; peak memory per rank against GAP's
#               process
#   containers  counting set and summing map, 8M inserts per rank at 4 ranks over 1,000
#               and 10M keys, against YGM's counting_set and map
#   coll        allreduce and allgather of 4 B, 2 KiB and 64 KiB (Courier's default
#               algorithm choice, 'auto') against MPI_Allreduce and MPI_Allgather
#   merging     reads merged and coalesced on their way (gather --combine) against the
#               plain gather, on bale's table (10,000 counters per rank) and on 1M
#               counters per rank
#
# Every Courier run verifies its result; the script stops if one does not.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; }

build=
mode=quick
blocks=histogram,gather,graph,kernels,containers,coll,merging
while [ $# -gt 0 ]; do
    case $1 in
    --quick | --full | --smoke) mode=${1#--} ;;
    --blocks) blocks=${2:?--blocks needs a list}; shift ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "compare.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
    *) [ -z "$build" ] || { echo "compare.sh: one build folder, not '$build' and '$1'" >&2; exit 2; }
       build=$1 ;;
    esac
    shift
done
[ -n "$build" ] || { usage >&2; exit 2; }
[ -f "$build/build.ninja" ] || { echo "compare.sh: $build is not a Meson build folder" >&2; exit 2; }
for b in ${blocks//,/ }; do
    case $b in histogram | gather | graph | kernels | containers | coll | merging) ;;
    *) echo "compare.sh: unknown block '$b' (histogram, gather, graph, kernels, containers, coll, merging)" >&2; exit 2 ;;
    esac
done
wants() { [[ ",$blocks," == *",$1,"* ]]; }

case $mode in
smoke)
    rounds=1 ranks="2" updates=200000 scales="10" graph_ranks="2" roots=2
    c_np=2 c_inserts=20K c_keys="1000 20000" coll_ranks="2" coll_reps=20 ;;
quick)
    rounds=3 ranks="2 4" updates=5000000 scales="18" graph_ranks="2" roots=16
    c_np=4 c_inserts=8M c_keys="1000 10M" coll_ranks="2 4" coll_reps=300 ;;
full)
    rounds=5 ranks="2 4 8" updates=5000000 scales="18 20" graph_ranks="1 2 4" roots=16
    big_graph_ranks="2"
    c_np=4 c_inserts=8M c_keys="1000 10M" coll_ranks="2 4 8" coll_reps=300 ;;
esac
big_graph_ranks=${big_graph_ranks:-$graph_ranks}   # at the scales after the first
table_per_rank=10000
big_table_per_rank=$((1 << 20))
[ "$mode" = smoke ] && big_table_per_rank=100000

peers=${PEERS:-../shared/peers}
work=$build/peers
mpirun=scripts/mpirun.sh
if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_base_warn_component_unused=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
results=$tmp/results
: >"$results"
skipped=()

say() { echo "compare.sh: $*" >&2; }
fail() { say "$*"; exit 1; }
skip() { skipped+=("$*"); say "skipped: $*"; }
# record BLOCK BENCHMARK WHO UNIT VALUE
record() {
    [ -n "$5" ] || fail "no figure from $3 ($1, $2)"
    printf '%s\t%s\t%s\t%s\t%s\n' "$@" >>"$results"
}

# ---- peers --------------------------------------------------------------------------

have_gap=0 have_kruskal=0 have_bale=0 have_ygm=0
build_peers() {
    mkdir -p "$work"
    if wants graph || wants kernels; then
        if [ -d "$peers/gapbs" ]; then
            local k missing=0
            for k in bfs cc sssp pr tc bc; do [ -x "$work/gapbs/$k" ] || missing=1; done
            if [ $missing = 1 ]; then
                rm -rf "$work/gapbs" && cp -r "$peers/gapbs" "$work/gapbs"
                make -s -C "$work/gapbs" -j"$(nproc)" bfs cc sssp pr tc bc >"$tmp/gap.log" 2>&1 ||
                    { cat "$tmp/gap.log" >&2; fail "GAP did not build (make -C $work/gapbs)"; }
            fi
            have_gap=1
        else
            skip "GAP: no $peers/gapbs (set PEERS)"
        fi
        if [ -f "$peers/kruskal.c" ]; then
            [ -x "$work/kruskal" ] || cc -O3 -o "$work/kruskal" "$peers/kruskal.c"
            have_kruskal=1
        else
            skip "kruskal: no $peers/kruskal.c (set PEERS)"
        fi
    fi
    if wants histogram || wants gather; then
        if [ -x "$work/bale/bin/histo" ] && [ -x "$work/bale/bin/ig" ]; then
            have_bale=1
        elif [ ! -d "$peers/bale/src/bale_classic" ]; then
            skip "bale: no $peers/bale/src/bale_classic (set PEERS)"
        elif ! command -v oshcc >/dev/null || ! command -v oshrun >/dev/null; then
            skip "bale: no oshcc/oshrun (Open MPI's OpenSHMEM)"
        elif ! command -v autoreconf >/dev/null || ! command -v libtoolize >/dev/null; then
            skip "bale: needs autoconf, automake and libtool (apt-get install autoconf automake libtool)"
        else
            say "building bale_classic into $work/bale (about a minute, once)"
            rm -rf "$work/bale" && mkdir -p "$work/bale"
            cp -r "$peers/bale/src/bale_classic" "$work/bale/src"
            if (cd "$work/bale/src" && export CC=oshcc CFLAGS='-O3 -DNDEBUG' &&
                ./bootstrap.sh && ./make_bale -s) >"$tmp/bale.log" 2>&1 &&
                [ -x "$work/bale/src/build_unknown/bin/histo" ]; then
                ln -s src/build_unknown/bin "$work/bale/bin"
                have_bale=1
            else
                tail -20 "$tmp/bale.log" >&2
                skip "bale: did not build (log above)"
            fi
        fi
    fi
    if wants containers; then
        local ygm_src=${YGM_SRC:-$work/ygm-src}
        if [ -x "$work/ygm_bench" ]; then
            have_ygm=1
        elif [ ! -d "$ygm_src/include/ygm" ]; then
            skip "YGM: no checkout (set YGM_SRC to a clone of github.com/LLNL/ygm)"
        elif scripts/ygm/build.sh "$ygm_src" "$work/ygm_bench" >"$tmp/ygm.log" 2>&1; then
            have_ygm=1
        else
            tail -20 "$tmp/ygm.log" >&2
            skip "YGM: its benchmark did not build (needs mpicxx with C++20, libcereal-dev, libboost-dev)"
        fi
    fi
}

# ---- runs of one program, each printing its figures ---------------------------------

# courier_histogram NP -> "courier local gather" (M/s), verified
courier_histogram() {
    "$mpirun" -np "$1" "$build/apps/histogram" --prepared --mode courier,local,gather \
        --updates "$updates" --table $((table_per_rank * $1)) --reps 5 >"$tmp/out" 2>&1 ||
        { cat "$tmp/out" >&2; fail "histogram at $1 ranks failed"; }
    awk '/VERIFICATION FAILED/ {bad = 1}
         ($1 == "courier" || $1 == "local" || $1 == "gather") && /verified/ {
             for (i = 1; i <= NF; i++) if ($i == "M") r[$1] = $(i - 1) }
         END {if (bad) exit 1; print r["courier"], r["local"], r["gather"]}' "$tmp/out" ||
        { cat "$tmp/out" >&2; fail "histogram at $1 ranks: verification failed"; }
}

# bale APP NP -> "exstack exstack2 conveyor" (M/s): bale prints the seconds all PEs took
# together; it may crash on exit after printing, which is not ours to judge. With more
# PEs than cores only exstack runs: exstack2 and conveyors wait by spinning, and
# their figures would measure the oversubscription, not the library.
bale() {
    local models=14
    [ "$2" -le "$(nproc)" ] || models=2
    (cd "$work/bale/bin" && timeout 300 oshrun --oversubscribe --mca osc ^rdma -np "$2" \
        "./$1" -n "$updates" -T "$table_per_rank" -M "$models" 2>&1 || true) |
        awk -v total=$(($2 * updates)) '
            $1 == "Exstack:" && $2 > 0 {e = total / $2 / 1e6}
            $1 == "Exstack2:" && $2 > 0 {e2 = total / $2 / 1e6}
            $1 == "Conveyor:" && $2 > 0 {c = total / $2 / 1e6}
            END {printf "%s %s %s\n", e ? sprintf("%.1f", e) : "-",
                 e2 ? sprintf("%.1f", e2) : "-", c ? sprintf("%.1f", c) : "-"}'
}

# the machine's state: one process's plain loop over the same prepared updates (M/s)
local_loop() {
    "$mpirun" -np 1 "$build/apps/histogram" --prepared --mode local --updates "$updates" \
        --table "$table_per_rank" --reps 3 |
        awk '$1 == "local" && /verified/ {for (i = 1; i <= NF; i++) if ($i == "M") print $(i - 1)}'
}
marker() { record "$1" local-loop local M/s "$(local_loop)"; }

block_bale() {
    for np in $ranks; do
        read -r c l g < <(courier_histogram "$np")
        record histogram "$np ranks" courier M/s "$c"
        record histogram local-loop local M/s "$l"
        record gather "$np ranks" courier M/s "$g"
        record gather local-loop local M/s "$l"
        [ $have_bale = 1 ] || continue
        local app names=(exstack exstack2 conveyors)
        for app in histo ig; do
            local block=histogram
            [ $app = ig ] && block=gather
            wants "$block" || continue
            read -r -a rates < <(bale "$app" "$np")
            [ "${rates[*]}" != "- - -" ] || skip "bale $app at $np ranks printed no time"
            [ "$np" -le "$(nproc)" ] || note="exstack2 and conveyors are left out at more ranks than the machine's $(nproc) cores (they spin while they wait)"
            for i in 0 1 2; do
                [ "${rates[$i]}" = - ] || record "$block" "$np ranks" "bale ${names[$i]}" M/s "${rates[$i]}"
            done
        done
    done
}

# courier_graph APP NP ARGS... -> "seconds MiB", validated
courier_graph() {
    local app=$1 np=$2
    shift 2
    "$mpirun" -np "$np" "$build/apps/$app" "$@" >"$tmp/out" 2>&1 ||
        { cat "$tmp/out" >&2; fail "$app at $np ranks failed"; }
    local t ok
    case $app in
    cc) ok="validated against union-find"; t=$(sed -n 's/.*rounds, \([0-9.]*\) s$/\1/p' "$tmp/out") ;;
    bfs) ok="validation: $roots of $roots searches valid"
         t=$(sed -n 's/.*time per search: mean \([0-9.]*\) s$/\1/p' "$tmp/out") ;;
    boruvka) ok="validated against Kruskal"; t=$(sed -n 's/^  time \([0-9.]*\) s.*/\1/p' "$tmp/out") ;;
    sssp | pagerank | tc | bc)
        ok="validated against the sequential reference: every trial"
        t=$(sed -n 's/.* trials: median \([0-9.]*\) s.*/\1/p' "$tmp/out") ;;
    esac
    grep -q "$ok" "$tmp/out" || { cat "$tmp/out" >&2; fail "$app at $np ranks: not validated"; }
    echo "$t $(sed -n 's/.*peak memory per rank \([0-9.]*\) MiB.*/\1/p' "$tmp/out" | head -1)"
}

# one_core COMMAND... -> the command's output, its peak resident MiB in $tmp/rss_mib
one_core() {
    /usr/bin/time -f '%M' -o "$tmp/rss" "$@"
    awk '{printf "%.1f", $1 / 1024}' "$tmp/rss" >"$tmp/rss_mib"
}

gap() { # APP THREADS FILE [ARGS...] -> "seconds MiB"
    local t trials=3 app=$1 threads=$2 file=$3
    shift 3
    [ "$app" = bfs ] && trials=$roots
    t=$(OMP_NUM_THREADS=$threads one_core "$work/gapbs/$app" -f "$file" -s -n "$trials" "$@" |
        sed -n 's/^Average Time: *\([0-9.]*\)$/\1/p')
    echo "$t $(cat "$tmp/rss_mib")"
}

kruskal() { # SCALE -> "seconds MiB"
    local t
    t=$(one_core "$work/kruskal" "$1" | sed -n 's/.*kruskal \([0-9.]*\) s$/\1/p')
    echo "$t $(cat "$tmp/rss_mib")"
}

# rmat_file SCALE [w] -> the R-MAT file of that scale (edge factor 16), written once:
# "u v" per line, or with w "u v w" with GAP's weights (integers 1 to 255)
rmat_file() {
    local s=$1 graph
    if [ "${2:-}" = w ]; then
        graph=$tmp/rmat$s.wel
        [ -f "$graph" ] || "$mpirun" -np 1 "$build/apps/sssp" --scale "$s" --write-graph "$graph" \
            --trials 1 >/dev/null
    else
        graph=$tmp/rmat$s.el
        [ -f "$graph" ] || "$mpirun" -np 1 "$build/apps/cc" --scale "$s" --write-graph "$graph" \
            --validate no >/dev/null
    fi
    [ -s "$graph" ] || fail "could not write the scale-$s graph $graph"
    echo "$graph"
}

block_kernels() {
    local s=$1 np t m th app gapname file ranks_here=$graph_ranks
    [ "$s" = "${scales%% *}" ] || ranks_here=$big_graph_ranks
    for app in sssp pagerank tc bc; do
        local extra=()
        gapname=$app
        file=$(rmat_file "$s")
        case $app in
        sssp) file=$(rmat_file "$s" w); extra=(-d 2) ;;
        pagerank) gapname=pr ;;
        esac
        for np in $ranks_here; do
            read -r t m < <(courier_graph "$app" "$np" --graph "$file" --validate --trials 3)
            record kernels "$app, scale $s" "courier $np ranks" s "$t"
            record kernels "$app memory, scale $s" "courier $np ranks" MiB "$m"
        done
        [ $have_gap = 1 ] || continue
        for th in 1 2; do
            read -r t m < <(gap "$gapname" "$th" "$file" "${extra[@]}")
            record kernels "$app, scale $s" "GAP $th thread$([ "$th" = 1 ] || echo s)" s "$t"
            [ "$th" = 2 ] || record kernels "$app memory, scale $s" "GAP (process)" MiB "$m"
        done
    done
}

block_graph() {
    local s=$1 graph np t m ranks_here=$graph_ranks
    [ "$s" = "${scales%% *}" ] || ranks_here=$big_graph_ranks
    graph=$(rmat_file "$s")
    local app args
    for app in cc bfs; do
        args=(--validate yes)
        [ "$app" = bfs ] && args=(--roots "$roots" --quiet)
        for np in $ranks_here; do
            read -r t m < <(courier_graph "$app" "$np" --graph "$graph" "${args[@]}")
            record graph "$app, scale $s" "courier $np ranks" s "$t"
            record graph "$app memory, scale $s" "courier $np ranks" MiB "$m"
        done
        [ $have_gap = 1 ] || continue
        for th in 1 2; do
            read -r t m < <(gap "$app" "$th" "$graph")
            record graph "$app, scale $s" "GAP $th thread$([ "$th" = 1 ] || echo s)" s "$t"
            [ "$th" = 2 ] || record graph "$app memory, scale $s" "GAP (process)" MiB "$m"
        done
    done
    for np in $ranks_here; do
        read -r t m < <(courier_graph boruvka "$np" --scale "$s" --validate yes)
        record graph "forest, scale $s" "courier $np ranks" s "$t"
        record graph "forest memory, scale $s" "courier $np ranks" MiB "$m"
    done
    if [ $have_kruskal = 1 ]; then
        read -r t m < <(kruskal "$s")
        record graph "forest, scale $s" kruskal s "$t"
        record graph "forest memory, scale $s" "kruskal (process)" MiB "$m"
    fi
}

block_containers() {
    local keys=$1 name rate
    "$mpirun" -np "$c_np" "$build/apps/container_bench" --keys "$keys" --inserts "$c_inserts" \
        --reps 1 --validate auto >"$tmp/out" 2>&1 || { cat "$tmp/out" >&2; fail "container_bench failed"; }
    grep -q WRONG "$tmp/out" && { cat "$tmp/out" >&2; fail "container_bench: wrong counts"; }
    while read -r name rate; do
        record containers "$name, $keys keys, $c_np ranks" courier "M inserts/s" "$rate"
    done < <(awk '/verified/ {print $1, $4}' "$tmp/out")
    [ $have_ygm = 1 ] || return 0
    "$mpirun" -np "$c_np" "$work/ygm_bench" "$keys" "$c_inserts" >"$tmp/out" 2>&1 ||
        { cat "$tmp/out" >&2; fail "ygm_bench failed (a wrong count, or it did not run)"; }
    while read -r name rate; do
        [ "$name" = array ] && continue
        record containers "$name, $keys keys, $c_np ranks" "YGM $name" "M inserts/s" "$rate"
    done < <(awk '$1 == "ygm" {print $2, $3}' "$tmp/out")
}

# coll NP: the latency of Courier's default choice ('auto') and of MPI's, per size
block_coll() {
    local np=$1
    "$mpirun" -np "$np" "$build/apps/coll_bench" --counts 0,256,8192 --sizes 4,2K,64K \
        --reps "$coll_reps" >"$tmp/out" 2>&1 || { cat "$tmp/out" >&2; fail "coll_bench at $np ranks failed"; }
    awk -v np="$np" '
        /^(allreduce|allgather) / {split($0, w, " "); what = w[1]}
        /^\| bytes/ {for (i = 2; i <= NF; i++) {gsub(/ /, "", $i); col[$i] = i}; next}
        /^\| [0-9]/ {
            gsub(/ /, "")
            n = split($0, f, "|")
            b = f[2] >= 1024 ? f[2] / 1024 " KiB" : f[2] " B"
            printf "%s %s, %s ranks\t%s\t%s\n", what, b, np, f[col["mpi"]], f[col["auto"]]
        }' FS='|' "$tmp/out" >"$tmp/coll"
    [ -s "$tmp/coll" ] || { cat "$tmp/out" >&2; fail "coll_bench printed no table"; }
    while IFS=$'\t' read -r bench m a; do
        record coll "$bench" courier us "$a"
        record coll "$bench" MPI us "$m"
    done <"$tmp/coll"
}

# merging NP TABLE_PER_RANK: the plain gather, then the merged one, one after the other
block_merging() {
    local np=$1 per=$2 run
    for run in plain merged; do
        local extra=()
        [ $run = merged ] && extra=(--combine)
        "$mpirun" -np "$np" "$build/apps/histogram" --mode gather --updates "$updates" \
            --table $((per * np)) --reps 3 "${extra[@]}" >"$tmp/out" 2>&1 ||
            { cat "$tmp/out" >&2; fail "histogram --mode gather failed"; }
        local rate
        rate=$(awk '$1 == "gather" && /verified/ {for (i = 1; i <= NF; i++) if ($i == "M") print $(i - 1)}' "$tmp/out")
        [ -n "$rate" ] || { cat "$tmp/out" >&2; fail "gather at $np ranks: not verified"; }
        local who="courier, merged"
        [ $run = plain ] && who="plain gather"
        record merging "$per counters per rank, $np ranks" "$who" "M requests/s" "$rate"
    done
}

# ---- the run --------------------------------------------------------------------------

machine() {
    local mpi
    mpi=$(mpirun --version 2>/dev/null | head -1 || echo "unknown MPI")
    echo "$(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), $mpi"
}

# COMPARE_NO_BUILD=1 (the test suite, which has just built them): use the apps as they are
[ -n "${COMPARE_NO_BUILD:-}" ] || ninja -C "$build" apps/histogram apps/cc apps/bfs apps/boruvka \
    apps/container_bench apps/coll_bench >/dev/null
build_peers
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(date -u '+%F %H:%M UTC')
t0=$SECONDS
note=
# timed NAME COMMAND...: runs it and says how long it took (on standard error)
timed() {
    local t=$SECONDS name=$1
    shift
    "$@"
    say "  $name: $((SECONDS - t)) s"
}
for ((r = 1; r <= rounds; r++)); do
    say "round $r of $rounds"
    if wants histogram || wants gather; then timed "histogram and gather" block_bale; fi
    if wants graph; then
        marker graph
        for s in $scales; do timed "graph, scale $s" block_graph "$s"; done
    fi
    if wants kernels; then
        marker kernels
        for s in $scales; do timed "kernels, scale $s" block_kernels "$s"; done
    fi
    if wants containers; then
        marker containers
        for k in $c_keys; do timed "containers, $k keys" block_containers "$k"; done
    fi
    if wants coll; then
        marker coll
        for np in $coll_ranks; do timed "coll, $np ranks" block_coll "$np"; done
    fi
    if wants merging; then
        marker merging
        for np in $ranks; do
            for per in $table_per_rank $big_table_per_rank; do
                timed "merging, $np ranks, $per per rank" block_merging "$np" "$per"
            done
        done
    fi
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
[ -z "${KEEP:-}" ] || cp "$results" "$KEEP"

echo "## scripts/compare.sh $build --$mode"
echo
echo "$started, commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (modified)'), $(machine);"
echo "$rounds round(s) in $(( (SECONDS - t0) / 60 ))m$(( (SECONDS - t0) % 60 ))s; load average $load_start at the start, $load_end at the end."
for s in "${skipped[@]}"; do echo "Skipped: $s."; done
[ -z "$note" ] || echo "Note: $note."
echo
python3 - "$results" "$blocks" <<'PY'
import statistics, sys
from collections import OrderedDict

rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1])]
higher = lambda unit: unit.endswith("/s")           # rates: higher is better
groups = OrderedDict()                              # (block, bench) -> who -> values
units, local = {}, {}
for block, bench, who, unit, value in rows:
    if bench == "local-loop":
        local.setdefault(block, []).append(float(value))
        continue
    groups.setdefault((block, bench), OrderedDict()).setdefault(who, []).append(float(value))
    units[(block, bench)] = unit

def spread(v):
    fmt = (lambda x: f"{x:.4g}")
    return f"{fmt(min(v))} / {fmt(statistics.median(v))} / {fmt(max(v))}"

print("| block | benchmark | unit | peer | peer min / median / max | Courier | "
      "Courier min / median / max | Courier / peer (medians) | better | local loop M/s |")
print("|---|---|---|---|---|---|---|---|---|---|")
for (block, bench), whos in groups.items():
    unit = units[(block, bench)]
    ours = [w for w in whos if w.startswith("courier")]
    theirs = [w for w in whos if not w.startswith("courier")]
    loop = local.get(block)
    loop = f"{min(loop):.0f}-{max(loop):.0f}" if loop else "-"
    better = "higher" if higher(unit) else "lower"
    for c in ours:
        for p in theirs or [None]:
            pv = whos[p] if p else None
            # A smoke run's times can round to 0: no ratio then, not a crash.
            ratio = (statistics.median(whos[c]) / statistics.median(pv)
                     if pv and statistics.median(pv) else None)
            print(f"| {block} | {bench} | {unit} | {p or '-'} | {spread(pv) if pv else '-'} | "
                  f"{c} | {spread(whos[c])} | {f'{ratio:.2f}' if ratio else '-'} | {better} | {loop} |")

# every block asked for must have given Courier's figures: a block that printed
# nothing means its output no longer fits this script
missing = [b for b in sys.argv[2].split(",") if not any(k[0] == b for k in groups)]
if missing:
    sys.exit("compare.sh: no figures from block(s) " + ", ".join(missing))
PY
