#!/usr/bin/env bash
# Courier against every peer, on the peer's own terms, alternating round after round;
# writes the raw figures as a result file and prints the tables rendered from it.
#
#   scripts/compare.sh BUILD [--quick | --full | --smoke] [--blocks LIST] [--out FILE]
#   scripts/compare.sh BUILD --hosts 2 [--smoke] [--out FILE]
#
#   --quick  (default) 3 rounds of every block, graphs of scale 18
#   --full   the published run: the same, its result file written under docs/results/
#            (named after its date) unless --out says otherwise; about 20 minutes on a
#            2-core machine
#   --smoke  every block at tiny sizes, one round: checks that the script, the apps'
#            output, the peers' output and the publisher still fit together (part of
#            the test suite), including coll_bench's self-test and bale's -b sweep
#   --blocks LIST  only these blocks, comma-separated: histogram, gather, graph,
#            kernels, containers, coll, merging, sort, randperm, matrix (default
#            all)
#   --out FILE     write the result file here
#   --hosts 2      across emulated hosts instead (scripts/hosts.sh): the histogram and
#            the gather against bale, the histogram with its updates drawn inside
#            the clock against MPI_Alltoallv, bfs, cc and the collectives,
#            2 rounds, at 2 hosts of 1 and of 2 ranks, at 2 hosts of 1 rank bound to
#            one core (the layout of a slow link), and the same jobs on one host;
#            the result file goes under docs/results/ as <date>-hosts.tsv
#
# The rule (docs/performance.md, "The rule"), applied by every block:
# - The same statistic on both sides, from each side's per-trial figures: a run's
#   figure is the mean of its trials, the first included (GAP's "Average Time"); GAP's
#   figures are its "Trial Time" lines; one-time set-up that later trials reuse (the
#   ghost indexes of sssp, pagerank, bc, tc) is inside Courier's first trial.
# - Cold against cold: one run per process on both sides is the headline (Courier's
#   histogram, gather, randperm and the matrix apps with --reps 1, bale's one run per
#   library); Courier's warm repetitions are a side of their own ("courier warm").
# - The peer's knobs swept and each setting kept as a side, so the table takes the
#   best: bale's -b (1K, 4K, 8K and 16K items) for exstack and exstack2 (conveyors has
#   no buffer knob), YGM's buffer (YGM_COM_BUFFER_SIZE_KB 1024, 4096, 16384).
# - Equal cores: Courier's P ranks against GAP's P threads; no headline row with more
#   ranks than cores, for any peer; the collectives at more ranks than cores are kept
#   in a block of their own, "oversubscribed", where MPI's run alike.
# - Memory of the whole job: every rank's peak summed, against the peer's process.
# - Every run checks itself: Courier's runs verify or the script stops; a peer's own
#   failure line (bale's FAILED or ERROR) records the side as failed; coll_bench checks
#   every call of every algorithm, its self-test must fail in --smoke.
#
# Environment: PEERS (default ../shared/peers: GAP, bale_classic, kruskal.c); YGM_SRC
# (a checkout of YGM, github.com/LLNL/ygm; default BUILD/peers/ygm-src: without it the
# YGM sides are skipped with a line saying so).
#
# The peers are built once into BUILD/peers: GAP's kernels (make), kruskal (cc -O3),
# bale_classic's apps over Open MPI's OpenSHMEM (oshcc; needs autoconf, automake and
# libtool), YGM's benchmark (scripts/ygm/build.sh). A peer that cannot be built is
# skipped with a line saying why; Courier's rows still run.
#
# Blocks:
#   histogram   bale's histogram: 5,000,000 8-byte updates per rank into 10,000
#               counters per rank, owners and offsets drawn before the clock
#               (histogram --prepared; also with --darray, in place within a node)
#               against bale's histo -M 1, 2, 4, 8 (agp's atomics, exstack,
#               exstack2, conveyors), each in its own process
#   gather      bale's index gather, same sizes, the reads' owners and offsets drawn
#               before the clock as ig packs them (histogram --prepared --mode gather;
#               with --darray drawn inside it) against ig
#   graph       cc (3 trials), bfs (16 roots) on one R-MAT file (edge factor 16) against
#               GAP's cc and bfs; boruvka on its generated weighted graph against kruskal (one
#               core) on its own R-MAT graph of the same scale
#   kernels     GAP's other four kernels (sssp, pagerank, tc, bc) on the same file
#               (sssp: weights 1 to 255, GAP's delta 2), 3 trials each, every one
#               validated, against GAP at the same cores
#   containers  counting set and summing map, 8M inserts per rank over 1,000 and 10M
#               keys, against YGM's counting_set and map
#   coll        allreduce and allgather of 4 B, 2 KiB and 64 KiB (Courier's 'auto')
#               against MPI_Allreduce and MPI_Allgather
#   merging     reads merged and coalesced on their way (gather --combine) against the
#               plain gather (Courier against itself)
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; }

build=
mode=quick
hosts=
out=
blocks=histogram,gather,graph,kernels,containers,coll,merging,sort,randperm,matrix
while [ $# -gt 0 ]; do
    case $1 in
    --quick | --full | --smoke) mode=${1#--} ;;
    --blocks) blocks=${2:?--blocks needs a list}; shift ;;
    --out) out=${2:?--out needs a file}; shift ;;
    --hosts) hosts=${2:?--hosts needs a count}; shift
             [ "$hosts" = 2 ] || { echo "compare.sh: --hosts '$hosts': only 2 hosts are compared" >&2; exit 2; } ;;
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
    case $b in histogram | gather | graph | kernels | containers | coll | merging | sort | randperm | matrix) ;;
    *) echo "compare.sh: unknown block '$b' (histogram, gather, graph, kernels, containers, coll, merging, sort, randperm, matrix)" >&2; exit 2 ;;
    esac
done
wants() { [[ ",$blocks," == *",$1,"* ]]; }

cores=$(nproc)
# at_most_cores LIST: the counts of LIST no larger than the machine's cores
at_most_cores() { local n; for n in "$@"; do [ "$n" -gt "$cores" ] || printf '%s ' "$n"; done; }
more_than_cores() { local n; for n in "$@"; do [ "$n" -le "$cores" ] || printf '%s ' "$n"; done; }
case $mode in
smoke)
    # two -b values: the sweep and its parsing are what a smoke run checks
    rounds=1 updates=200000 scale=10 roots=2 c_inserts=20K c_keys="1000 20000" coll_reps=20
    bale_b="1024 8192" ygm_kb="1024 16384"
    ranks=$(at_most_cores 2) graph_cores=$(at_most_cores 1 2) over_ranks= ;;
quick | full)
    rounds=3 updates=5000000 scale=18 roots=16 c_inserts=8M c_keys="1000 10M" coll_reps=300
    bale_b="1024 4096 8192 16384" ygm_kb="1024 4096 16384"
    ranks=$(at_most_cores 2 4 8) graph_cores=$(at_most_cores 1 2 4 8)
    over_ranks=$(more_than_cores 4 8) ;;
esac
[ "$mode" = quick ] && over_ranks=
if [ -n "$hosts" ]; then
    # the sizes of the first runs across hosts: 2M updates per rank, scale 16, 8 roots;
    # bale's -b swept over the best value on one host and a larger one (TCP between
    # hosts may want larger buffers)
    blocks=hosts rounds=2 updates=2000000 scale=16 roots=8 coll_reps=100 bale_b="4096 16384"
    host_layouts="1x2 2x1 2x1b 1x4 2x2"
    [ "$mode" = smoke ] && rounds=1 updates=100000 scale=10 roots=2 coll_reps=10 bale_b=4096 host_layouts="1x2 2x1"
fi
[ -n "$ranks" ] || ranks=1
c_np=$(echo $ranks | awk '{print $NF}')   # the containers at the most ranks that fit
table_per_rank=10000
sort_records=4M
[ "$mode" = smoke ] && sort_records=100K
randperm_n=1000000
[ "$mode" = smoke ] && randperm_n=20000
matrix_rows=500000 # bale's default rows per PE for its matrix apps
[ "$mode" = smoke ] && matrix_rows=20000
big_table_per_rank=$((1 << 20))
[ "$mode" = smoke ] && big_table_per_rank=100000

peers=${PEERS:-../shared/peers}
work=$build/peers
mpirun=scripts/mpirun.sh
root=$PWD
if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_base_warn_component_unused=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
results=$tmp/results
: >"$results"
skipped=()
round=0

say() { echo "compare.sh: $*" >&2; }
fail() { say "$*"; exit 1; }
skip() { skipped+=("$*"); say "skipped: $*"; }
# record BLOCK BENCHMARK SIDE UNIT TRIAL VALUE: one figure of this round
record() {
    [ -n "$6" ] || fail "no figure from $3 ($1, $2)"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$round" "$5" "$6" >>"$results"
}
# record_trials BLOCK BENCHMARK SIDE UNIT VALUES...: one figure per trial
record_trials() {
    local b=$1 bench=$2 side=$3 unit=$4 t=1
    shift 4
    [ $# -gt 0 ] || fail "no trial figures from $side ($b, $bench)"
    for v in "$@"; do record "$b" "$bench" "$side" "$unit" "$t" "$v"; t=$((t + 1)); done
}
cores_name() { [ "$1" = 1 ] && echo "1 core" || echo "$1 cores"; }

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
    if wants histogram || wants gather || wants hosts || wants randperm || wants matrix; then
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

# ---- layouts across hosts (--hosts) ----------------------------------------------------

# A layout is HxK (H hosts of K ranks; H = 1 is one host, plain mpirun) or HxKb (bound
# to cores as the MPI binds by default: every host's first rank on core 0).
layout=       # the layout of the run in progress, empty outside --hosts
bench_prefix= # what bale's runs are named after there: histogram or gather
layout_ranks() { local h=${1%%x*} k=${1#*x}; echo $((h * ${k%b})); }
layout_name() {
    local h=${1%%x*} k=${1#*x} b=
    [ "${k%b}" = "$k" ] || b=", bound to one core"
    k=${k%b}
    echo "$h host$([ "$h" = 1 ] || echo s) of $k rank$([ "$k" = 1 ] || echo s)$b"
}
# launcher LAYOUT [shmem]: the command that starts a job of that layout
launcher() {
    local h=${1%%x*} k=${1#*x}
    if [ "$h" = 1 ]; then
        [ "${2:-}" = shmem ] && echo "oshrun --oversubscribe -np ${k%b}" || echo "$root/$mpirun -np ${k%b}"
        return
    fi
    echo "$root/scripts/hosts.sh --hosts $h --per-host ${k%b}$([ "${k%b}" = "$k" ] || echo ' --bind')"
}
# bench_of NP: a benchmark's name for NP ranks (its layout's across hosts)
bench_of() { if [ -n "$layout" ]; then echo "$bench_prefix, $(layout_name "$layout")"; else echo "$1 ranks"; fi; }
# shmem_launcher NP: how bale's OpenSHMEM job starts
shmem_launcher() { if [ -n "$layout" ]; then launcher "$layout" shmem; else echo "oshrun --oversubscribe -np $1"; fi; }

# block_hosts LAYOUT: every benchmark of --hosts in one layout; each run in its own
# process (cold), verified
block_hosts() {
    layout=$1
    local np name table mode file
    np=$(layout_ranks "$1")
    name=$(layout_name "$1")
    table=$((table_per_rank * np))
    read -r -a run <<<"$(launcher "$1")"
    # against bale: updates drawn before the clock, as bale draws them (--prepared);
    # against MPI_Alltoallv, which draws and buckets inside its time: Courier drawing
    # inside its time too (no --prepared), each in its own process
    local prep
    for mode in courier plain alltoallv gather; do
        prep=--prepared
        [ $mode = plain ] || [ $mode = alltoallv ] && prep=
        "${run[@]}" "$build/apps/histogram" $prep --mode "${mode/plain/courier}" --updates "$updates" \
            --table "$table" --reps 1 >"$tmp/out" 2>&1 || { cat "$tmp/out" >&2; fail "histogram --mode $mode, $name, failed"; }
        case $mode in
        courier) record hosts "histogram, $name" courier M/s 1 "$(mode_rate "$tmp/out" courier)" ;;
        plain) record hosts "histogram drawn in the clock, $name" courier M/s 1 "$(mode_rate "$tmp/out" courier)" ;;
        alltoallv) record hosts "histogram drawn in the clock, $name" MPI_Alltoallv M/s 1 "$(mode_rate "$tmp/out" alltoallv)" ;;
        gather) record hosts "gather, $name" courier M/s 1 "$(mode_rate "$tmp/out" gather)" ;;
        esac
    done
    if [ $have_bale = 1 ]; then
        local app lib b
        for app in histo ig; do
            bench_prefix=histogram
            [ $app = ig ] && bench_prefix=gather
            for lib in exstack exstack2 conveyors; do
                for b in $bale_b; do
                    [ $lib = conveyors ] && b=-
                    bale_run "$app" "$np" "$lib" "$b" hosts
                    [ $lib != conveyors ] || break
                done
            done
        done
    fi
    file=$(rmat_file "$scale")
    "${run[@]}" "$build/apps/bfs" --graph "$file" --roots "$roots" >"$tmp/out" 2>&1 &&
        grep -q "validation: $roots of $roots searches valid" "$tmp/out" ||
        { cat "$tmp/out" >&2; fail "bfs, $name, failed"; }
    # shellcheck disable=SC2046
    record_trials hosts "bfs, $name" courier s \
        $(sed -n 's/^ *search *[0-9]* from .*, \([0-9.]*\) s, .*/\1/p' "$tmp/out")
    "${run[@]}" "$build/apps/cc" --graph "$file" --validate yes --trials 3 >"$tmp/out" 2>&1 &&
        grep -q "validated against union-find" "$tmp/out" || { cat "$tmp/out" >&2; fail "cc, $name, failed"; }
    # shellcheck disable=SC2046
    record_trials hosts "cc, $name" courier s $(sed -n 's/^ *trial times (s): //p' "$tmp/out")
    "${run[@]}" "$build/apps/coll_bench" --counts 0 --sizes 4,64K --reps "$coll_reps" \
        >"$tmp/out" 2>&1 || { cat "$tmp/out" >&2; fail "coll_bench, $name, failed"; }
    record_coll hosts "$name"
    layout=
}

# ---- runs of one program, each recording its figures ---------------------------------

# mpi_rate FILE MODE -> the M/s of that mode's verified line of histogram's output
mode_rate() {
    awk -v m="$2" '$1 == m && /verified/ {for (i = 1; i <= NF; i++) if ($i == "M") print $(i - 1)}' "$1"
}

# block_bale NP: Courier's histogram and gather cold (one run per process) and warm
# (median of 5 in one process, with the row's local loop), then bale's libraries
block_bale() {
    local np=$1 table=$((table_per_rank * $1)) mode block
    for mode in courier gather; do
        block=histogram
        [ $mode = gather ] && block=gather
        wants $block || continue
        "$mpirun" -np "$np" "$build/apps/histogram" --prepared --mode "$mode" --updates "$updates" \
            --table "$table" --reps 1 >"$tmp/out" 2>&1 || { cat "$tmp/out" >&2; fail "histogram --mode $mode at $np ranks failed"; }
        record $block "$np ranks" courier M/s 1 "$(mode_rate "$tmp/out" "$mode")"
        # the same through the darray: within a node in place (docs/darray.md)
        "$mpirun" -np "$np" "$build/apps/histogram" --prepared --darray --mode "$mode" \
            --updates "$updates" --table "$table" --reps 1 >"$tmp/out" 2>&1 ||
            { cat "$tmp/out" >&2; fail "histogram --darray --mode $mode at $np ranks failed"; }
        record $block "$np ranks" "courier darray" M/s 1 "$(mode_rate "$tmp/out" "$mode")"
    done
    "$mpirun" -np "$np" "$build/apps/histogram" --prepared --mode courier,local,gather \
        --updates "$updates" --table "$table" --reps 5 >"$tmp/out" 2>&1 ||
        { cat "$tmp/out" >&2; fail "histogram at $np ranks failed"; }
    ! grep -q "VERIFICATION FAILED" "$tmp/out" || { cat "$tmp/out" >&2; fail "histogram at $np ranks: verification failed"; }
    for block in histogram gather; do
        wants $block || continue
        mode=courier
        [ $block = gather ] && mode=gather
        record $block "$np ranks" "courier warm" M/s 1 "$(mode_rate "$tmp/out" $mode)"
        record $block "$np ranks" "local loop" M/s 1 "$(mode_rate "$tmp/out" local)"
    done
    [ $have_bale = 1 ] || return 0
    local app lib b
    for app in histo ig; do
        block=histogram
        [ $app = ig ] && block=gather
        wants $block || continue
        for lib in agp exstack exstack2 conveyors; do
            for b in $bale_b; do
                [ $lib = conveyors ] || [ $lib = agp ] && b=- # no buffer knob
                bale_run "$app" "$np" "$lib" "$b" "$block"
                [ $lib != conveyors ] && [ $lib != agp ] || break
            done
        done
    done
}

# bale_run APP NP LIBRARY B BLOCK: one library in its own process (-M 1, 2, 4 or 8);
# bale prints the seconds all PEs took together; rate = updates x PEs / seconds. A
# line of bale's own saying FAILED or ERROR records the side as failed. bale may crash
# on exit after printing its time and check: that is not ours to judge.
bale_run() {
    local app=$1 np=$2 lib=$3 b=$4 block=$5 model args side
    case $lib in agp) model=1 ;; exstack) model=2 ;; exstack2) model=4 ;; conveyors) model=8 ;; esac
    args=(-n "$updates" -T "$table_per_rank" -M "$model")
    side="bale $lib"
    [ "$b" = - ] || { args+=(-b "$b"); side="bale $lib -b $((b / 1024))K"; }
    (cd "$work/bale/bin" && OMPI_MCA_osc=^rdma timeout 300 $(shmem_launcher "$np") \
        "./$app" "${args[@]}" >"$tmp/bale" 2>&1 || true)
    if grep -qE 'FAILED|ERROR' "$tmp/bale"; then
        say "bale $app $lib at $np ranks failed its own check: $(grep -m1 -E 'FAILED|ERROR' "$tmp/bale")"
        record "$block" "$(bench_of "$np")" "$side" M/s 1 failed
        return 0
    fi
    local rate
    rate=$(awk -v total=$((np * updates)) '
        ($1 == "AGP:" || $1 == "Exstack:" || $1 == "Exstack2:" || $1 == "Conveyor:") && $2 > 0 {
            printf "%.2f\n", total / $2 / 1e6}' "$tmp/bale")
    if [ -z "$rate" ]; then
        say "bale $app $lib at $np ranks printed no time: $(tail -1 "$tmp/bale")"
        record "$block" "$(bench_of "$np")" "$side" M/s 1 failed
        return 0
    fi
    record "$block" "$(bench_of "$np")" "$side" M/s 1 "$rate"
}

# courier_graph APP NP ARGS...: runs it, checks it validated; leaves the output in
# $tmp/out
courier_graph() {
    local app=$1 np=$2 ok
    shift 2
    "$mpirun" -np "$np" "$build/apps/$app" "$@" >"$tmp/out" 2>&1 ||
        { cat "$tmp/out" >&2; fail "$app at $np ranks failed"; }
    case $app in
    cc) ok="validated against union-find" ;;
    bfs) ok="validation: $roots of $roots searches valid" ;;
    boruvka) ok="validated against Kruskal" ;;
    *) ok="validated against the sequential reference: every trial" ;;
    esac
    grep -q "$ok" "$tmp/out" || { cat "$tmp/out" >&2; fail "$app at $np ranks: not validated"; }
}
job_mib() { sed -n 's/.*of the job \([0-9.]*\) MiB.*/\1/p' "$tmp/out" | head -1; }

# one_core COMMAND... -> the command's output in $tmp/peer, its peak resident MiB in
# $tmp/rss_mib
one_core() {
    /usr/bin/time -f '%M' -o "$tmp/rss" "$@" >"$tmp/peer" 2>&1 || { cat "$tmp/peer" >&2; fail "$1 failed"; }
    awk '{printf "%.1f", $1 / 1024}' "$tmp/rss" >"$tmp/rss_mib"
}

# gap BLOCK BENCH APP THREADS FILE [ARGS...]: GAP's trials (its "Trial Time" lines,
# the statistic it averages) and its process's memory
gap() {
    local block=$1 bench=$2 app=$3 threads=$4 file=$5 trials=3
    shift 5
    [ "$app" = bfs ] && trials=$roots
    # on the cores Open MPI binds Courier's ranks to (rank i on core i): equal cores,
    # where an unbound peer would take whichever core is quicker at the moment (a
    # virtual machine's cores differ from minute to minute)
    local cores=()
    command -v taskset >/dev/null && [ "$threads" -le "$(nproc)" ] && cores=(taskset -c "0-$((threads - 1))")
    OMP_NUM_THREADS=$threads one_core "${cores[@]}" "$work/gapbs/$app" -f "$file" -s -n "$trials" "$@"
    local times
    times=$(sed -n 's/^Trial Time: *\([0-9.]*\)$/\1/p' "$tmp/peer")
    [ "$(echo "$times" | wc -w)" = "$trials" ] || { cat "$tmp/peer" >&2; fail "GAP $app printed not $trials trial times"; }
    # shellcheck disable=SC2086
    record_trials "$block" "$bench, $(cores_name "$threads")" GAP s $times
    record "$block" "${bench/,/ memory,}, $(cores_name "$threads")" GAP MiB 1 "$(cat "$tmp/rss_mib")"
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
    local np app gapname file bench
    for app in sssp pagerank tc bc; do
        local extra=()
        gapname=$app
        file=$(rmat_file "$scale")
        case $app in
        sssp) file=$(rmat_file "$scale" w); extra=(-d 2) ;;
        pagerank) gapname=pr ;;
        esac
        bench="$app, scale $scale"
        for np in $graph_cores; do
            courier_graph "$app" "$np" --graph "$file" --validate --trials 3 --quiet
            # shellcheck disable=SC2046
            record_trials kernels "$bench, $(cores_name "$np")" courier s \
                $(sed -n 's/^ *trial times (s): //p' "$tmp/out")
            record kernels "$app memory, scale $scale, $(cores_name "$np")" courier MiB 1 "$(job_mib)"
            [ $have_gap = 1 ] && gap kernels "$bench" "$gapname" "$np" "$file" "${extra[@]}"
        done
    done
}

block_graph() {
    local graph np t bench
    graph=$(rmat_file "$scale")
    for np in $graph_cores; do
        # cc: three trials in one process, as GAP's three
        bench="cc, scale $scale, $(cores_name "$np")"
        courier_graph cc "$np" --graph "$graph" --validate yes --trials 3
        # shellcheck disable=SC2046
        record_trials graph "$bench" courier s $(sed -n 's/^ *trial times (s): //p' "$tmp/out")
        record graph "cc memory, scale $scale, $(cores_name "$np")" courier MiB 1 "$(job_mib)"
        [ $have_gap = 1 ] && gap graph "cc, scale $scale" cc "$np" "$graph"
        bench="bfs, scale $scale, $(cores_name "$np")"
        courier_graph bfs "$np" --graph "$graph" --roots "$roots"
        # shellcheck disable=SC2046
        record_trials graph "$bench" courier s \
            $(sed -n 's/^ *search *[0-9]* from .*, \([0-9.]*\) s, .*/\1/p' "$tmp/out")
        record graph "bfs memory, scale $scale, $(cores_name "$np")" courier MiB 1 "$(job_mib)"
        [ $have_gap = 1 ] && gap graph "bfs, scale $scale" bfs "$np" "$graph"
        # the forest against one core's Kruskal: the peer has one core at every count
        courier_graph boruvka "$np" --scale "$scale" --validate yes
        record graph "forest, scale $scale, $(cores_name "$np")" courier s 1 \
            "$(sed -n 's/^  time \([0-9.]*\) s.*/\1/p' "$tmp/out")"
        record graph "forest memory, scale $scale, $(cores_name "$np")" courier MiB 1 "$(job_mib)"
        if [ $have_kruskal = 1 ]; then
            one_core "$work/kruskal" "$scale"
            record graph "forest, scale $scale, $(cores_name "$np")" "kruskal (1 core)" s 1 \
                "$(sed -n 's/.*kruskal \([0-9.]*\) s$/\1/p' "$tmp/peer")"
            record graph "forest memory, scale $scale, $(cores_name "$np")" "kruskal (1 core)" MiB 1 "$(cat "$tmp/rss_mib")"
        fi
    done
}

block_containers() {
    local keys=$1 name rate kb
    "$mpirun" -np "$c_np" "$build/apps/container_bench" --keys "$keys" --inserts "$c_inserts" \
        --reps 1 --validate auto >"$tmp/out" 2>&1 || { cat "$tmp/out" >&2; fail "container_bench failed"; }
    ! grep -q WRONG "$tmp/out" || { cat "$tmp/out" >&2; fail "container_bench: wrong counts"; }
    while read -r name rate; do
        record containers "$name, $keys keys, $c_np ranks" courier "M inserts/s" 1 "$rate"
    done < <(awk '/verified/ {print $1, $4}' "$tmp/out")
    [ $have_ygm = 1 ] || return 0
    for kb in $ygm_kb; do
        YGM_COM_BUFFER_SIZE_KB=$kb "$mpirun" -np "$c_np" "$work/ygm_bench" "$keys" "$c_inserts" \
            >"$tmp/out" 2>&1 || { cat "$tmp/out" >&2; fail "ygm_bench failed (a wrong count, or it did not run)"; }
        while read -r name rate; do
            [ "$name" = array ] && continue
            name=${name/_/ }
            record containers "$name, $keys keys, $c_np ranks" "YGM buffer $((kb / 1024)) MiB" "M inserts/s" 1 "$rate"
        done < <(awk '$1 == "ygm" {print $2, $3}' "$tmp/out")
    done
}

# block_coll NP BLOCK: the latency of Courier's default choice ('auto') and of MPI's,
# per size (coll_bench checks every call of both)
block_coll() {
    local np=$1 block=$2
    "$mpirun" -np "$np" "$build/apps/coll_bench" --counts 0,256,8192 --sizes 4,2K,64K \
        --reps "$coll_reps" >"$tmp/out" 2>&1 || { cat "$tmp/out" >&2; fail "coll_bench at $np ranks failed"; }
    record_coll "$block" "$np ranks"
}

# record_coll BLOCK WHERE: coll_bench's table in $tmp/out, a figure of Courier's
# 'auto' and of MPI's per collective and size, named "allreduce 4 B, WHERE"
record_coll() {
    awk -v where="$2" '
        /^(allreduce|allgather) / {split($0, w, " "); what = w[1]}
        /^\| bytes/ {for (i = 2; i <= NF; i++) {gsub(/ /, "", $i); col[$i] = i}; next}
        /^\| [0-9]/ {
            gsub(/ /, "")
            n = split($0, f, "|")
            b = f[2] >= 1024 ? f[2] / 1024 " KiB" : f[2] " B"
            printf "%s %s, %s\t%s\t%s\n", what, b, where, f[col["mpi"]], f[col["auto"]]
        }' FS='|' "$tmp/out" >"$tmp/coll"
    [ -s "$tmp/coll" ] || { cat "$tmp/out" >&2; fail "coll_bench printed no table"; }
    while IFS=$'\t' read -r bench m a; do
        record "$1" "$bench" courier us 1 "$a"
        record "$1" "$bench" MPI us 1 "$m"
    done <"$tmp/coll"
}

# coll_self_test: coll_bench must catch an algorithm that writes nothing
coll_self_test() {
    if "$mpirun" -np 2 "$build/apps/coll_bench" --self-test --reps 2 --counts 0 \
        --collective allreduce >"$tmp/out" 2>&1; then
        cat "$tmp/out" >&2
        fail "coll_bench --self-test passed: its check no longer catches a wrong result"
    fi
    grep -q "a wrong result in call 1" "$tmp/out" || { cat "$tmp/out" >&2; fail "coll_bench --self-test failed otherwise than by its check"; }
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
        local rate who="courier"
        rate=$(mode_rate "$tmp/out" gather)
        [ -n "$rate" ] || { cat "$tmp/out" >&2; fail "gather at $np ranks: not verified"; }
        [ $run = plain ] && who="plain gather"
        record merging "$per counters per rank, $np ranks" "$who" "M requests/s" 1 "$rate"
    done
}

# randperm NP: apps/randperm against bale's randperm (-M 2, 4, 8: exstack and
# exstack2 with -b swept, conveyors), N = NP x randperm_n values; each side one run in
# a fresh process a round, cold, as bale runs (Courier's figure its trial, bale's
# its own mean); a bale run that fails its check or prints no time is recorded as
# failed
block_randperm() {
    local np=$1 lib b model side rate
    "$mpirun" -np "$np" "$build/apps/randperm" -n "$randperm_n" --reps 1 >"$tmp/out" 2>&1 ||
        { cat "$tmp/out" >&2; fail "randperm at $np ranks failed (not a permutation?)"; }
    record_trials randperm "$np ranks" courier "M values/s" $(awk '$1 == "trial" {print $5}' "$tmp/out")
    [ $have_bale = 1 ] || return 0
    for lib in exstack exstack2 conveyors; do
        for b in $bale_b; do
            case $lib in agp) model=1 ;; exstack) model=2 ;; exstack2) model=4 ;; conveyors) model=8 b=- ;; esac
            local args=(-n "$randperm_n" -M "$model")
            side="bale $lib"
            [ "$b" = - ] || { args+=(-b "$b"); side="bale $lib -b $((b / 1024))K"; }
            (cd "$work/bale/bin" && OMPI_MCA_osc=^rdma timeout 300 $(shmem_launcher "$np") \
                ./randperm "${args[@]}" >"$tmp/bale" 2>&1 || true)
            rate=$(awk -v total=$((np * randperm_n)) '
                ($1 == "AGP:" || $1 == "Exstack:" || $1 == "Exstack2:" || $1 == "Conveyor:") && $2 > 0 {
                    printf "%.2f\n", total / $2 / 1e6}' "$tmp/bale")
            if grep -qE 'FAIL|ERROR' "$tmp/bale" || [ -z "$rate" ]; then
                say "bale randperm $lib at $np ranks: $(grep -m1 -E 'FAIL|ERROR' "$tmp/bale" || tail -1 "$tmp/bale")"
                rate=failed
            fi
            record randperm "$np ranks" "$side" "M values/s" 1 "$rate"
            [ $lib != conveyors ] || break
        done
    done
}

# matrix APP NP: apps/transpose_matrix, apps/permute_matrix, apps/toposort or
# apps/triangles against bale's app of the same name (its toposort is built as topo):
# -M 2, 4, 8, exstack and exstack2 with -b swept, conveyors; both at bale's default
# sizes (matrix_rows rows per rank, 10 entries per row, lower triangular; a fifth of
# the rows for triangles, as bale's defaults are). Each side runs once in a fresh
# process a round, cold, as bale runs. The rate is each side's own entries over its
# time: Courier's the slowest rank's, bale's its mean over the PEs; a bale run that
# fails its check or prints no time is recorded as failed.
block_matrix() {
    local name=$1 np=$2 lib b model side rate
    local rows=$matrix_rows
    [ "$name" != triangles ] || rows=$((matrix_rows / 5))
    "$mpirun" -np "$np" "$build/apps/$name" -n "$rows" --reps 1 >"$tmp/out" 2>&1 ||
        { cat "$tmp/out" >&2; fail "$name at $np ranks failed its check"; }
    record_trials matrix "$name, $np ranks" courier "M entries/s" $(awk '$1 == "trial" {print $5}' "$tmp/out")
    [ $have_bale = 1 ] || return 0
    for lib in exstack exstack2 conveyors; do
        for b in $bale_b; do
            case $lib in exstack) model=2 ;; exstack2) model=4 ;; conveyors) model=8 b=- ;; esac
            local args=(-n "$rows" -M "$model")
            side="bale $lib"
            [ "$b" = - ] || { args+=(-b "$b"); side="bale $lib -b $((b / 1024))K"; }
            local exe=$name
            [ "$name" != toposort ] || exe=topo
            (cd "$work/bale/bin" && OMPI_MCA_osc=^rdma timeout 300 $(shmem_launcher "$np") \
                ./"$exe" "${args[@]}" >"$tmp/bale" 2>&1 || true)
            # the time follows its library's name, which toposort prints after its
            # level count
            rate=$(awk '
                $2 == "nonzeros" {nnz = $1}
                {for (i = 1; i < NF; i++)
                    if (($i == "Exstack:" || $i == "Exstack2:" || $i == "Conveyor:") &&
                        $(i + 1) > 0 && nnz > 0) printf "%.2f\n", nnz / $(i + 1) / 1e6}' "$tmp/bale")
            if grep -qE 'FAIL|ERROR' "$tmp/bale" || [ -z "$rate" ]; then
                say "bale $name $lib at $np ranks: $(grep -m1 -E 'FAIL|ERROR' "$tmp/bale" || tail -1 "$tmp/bale")"
                rate=failed
            fi
            record matrix "$name, $np ranks" "$side" "M entries/s" 1 "$rate"
            [ $lib != conveyors ] || break
        done
    done
}

# sort NP RECORDS: apps/sort's three modes alternating within one run (cr_sort, the
# bulk-synchronous sample sort over MPI_Alltoallv, one core sorting every rank's
# records with the faster of a radix sort and qsort while the others sleep), every
# trial validated; a figure per trial
block_sort() {
    local np=$1 n=$2 m side
    "$mpirun" -np "$np" "$build/apps/sort" --records "$n" --mode all --reps 3 >"$tmp/out" 2>&1 ||
        { cat "$tmp/out" >&2; fail "sort at $np ranks failed (a trial not validated?)"; }
    for m in courier alltoallv serial; do
        case $m in
        courier) side=courier ;;
        alltoallv) side="sample sort, MPI_Alltoallv" ;;
        *) side="one core, radix or qsort" ;;
        esac
        record_trials sort "8-byte keys, $n per rank, $np ranks" "$side" "M records/s" \
            $(awk -v m=$m '$1 == "trial" && $3 == m {print $6}' "$tmp/out")
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
    apps/sssp apps/pagerank apps/tc apps/bc apps/container_bench apps/coll_bench \
    apps/randperm apps/sort apps/transpose_matrix apps/permute_matrix apps/toposort \
    apps/triangles >/dev/null
build_peers
started=$(date -u '+%F %H:%M UTC')
stamp=$(date -u '+%Y-%m-%dT%H%M')
t0=$SECONDS
# timed NAME COMMAND...: runs it and says how long it took (on standard error)
timed() {
    local t=$SECONDS name=$1
    shift
    "$@"
    say "  $name: $((SECONDS - t)) s"
}
[ "$mode" != smoke ] || ! wants coll || coll_self_test
for ((round = 1; round <= rounds; round++)); do
    say "round $round of $rounds"
    if wants histogram || wants gather; then
        for np in $ranks; do timed "histogram and gather, $np ranks" block_bale "$np"; done
    fi
    if wants graph; then timed "graph, scale $scale" block_graph; fi
    if wants kernels; then timed "kernels, scale $scale" block_kernels; fi
    if wants containers; then
        for k in $c_keys; do timed "containers, $k keys" block_containers "$k"; done
    fi
    if wants coll; then
        for np in $ranks; do timed "coll, $np ranks" block_coll "$np" coll; done
        for np in $over_ranks; do timed "coll, $np ranks (more than cores)" block_coll "$np" oversubscribed; done
    fi
    if wants hosts; then
        for l in $host_layouts; do timed "across hosts: $(layout_name "$l")" block_hosts "$l"; done
    fi
    if wants randperm; then
        for np in $ranks; do timed "randperm, $np ranks" block_randperm "$np"; done
    fi
    if wants sort; then
        for np in $ranks; do timed "sort, $np ranks" block_sort "$np" "$sort_records"; done
    fi
    if wants matrix; then
        for np in $ranks; do
            for app in transpose_matrix permute_matrix toposort triangles; do
                timed "$app, $np ranks" block_matrix "$app" "$np"
            done
        done
    fi
    if wants merging; then
        for np in $ranks; do
            for per in $table_per_rank $big_table_per_rank; do
                timed "merging, $np ranks, $per per rank" block_merging "$np" "$per"
            done
        done
    fi
done

commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD 2>/dev/null || commit="$commit (modified)"
file=${out:-$tmp/result.tsv}
[ -n "$out" ] || [ "$mode" != full ] || { mkdir -p docs/results; file=docs/results/$stamp-full.tsv; }
if [ -n "$hosts" ] && [ -z "$out" ] && [ "$mode" != smoke ]; then
    mode=hosts
    mkdir -p docs/results
    file=docs/results/$stamp-hosts.tsv
fi
{
    printf 'date\tcommit\tmachine\tmode\tblock\tbench\tside\tunit\tround\ttrial\tvalue\n'
    awk -v pre="$started	$commit	$(machine)	$mode" '{print pre "\t" $0}' "$results"
} >"$file"
say "$rounds round(s) in $(( (SECONDS - t0) / 60 ))m$(( (SECONDS - t0) % 60 ))s; figures in $file"
for s in "${skipped[@]}"; do echo "Skipped: $s."; done
python3 scripts/publish_results.py --print "$file"
# every block asked for must have given Courier's figures: a block that printed
# nothing means its output no longer fits this script
for b in ${blocks//,/ }; do
    awk -F'\t' -v b="$b" 'NR > 1 && $5 == b && $7 ~ /^courier/ {found = 1} END {exit !found}' "$file" ||
        fail "no figures from block $b"
done
