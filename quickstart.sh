#!/usr/bin/env bash
# Courier quick start on Debian: installs what is missing, builds, runs.
#
#   ./quickstart.sh demo [FLAGS]    build, then run the main job (BFS) on 4 ranks
#   ./quickstart.sh test            build, run the whole test suite, then check that
#                                   the README's commands run and an install works
#   ./quickstart.sh test-sanitize   unit, simulation, fatal and core MPI tests in a
#                                   separate ASan + UBSan build
#   ./quickstart.sh test-hosts      the MPI programs across emulated hosts on this
#                                   machine (scripts/hosts.sh; needs root or user
#                                   namespaces): 2 hosts of 2 ranks, 3 of 1, 2 and 1
#   ./quickstart.sh build           only install and build
#   ./quickstart.sh run ARGS        mpirun ARGS with the settings below (scripts/mpirun.sh)
#
# Packages come from apt-get (as root, or through sudo). Open MPI is told it may run
# as root and with more ranks than cores, which is what a laptop or CI box needs.
set -euo pipefail
cd "$(dirname "$0")"

PACKAGES=(build-essential meson ninja-build pkg-config openmpi-bin libopenmpi-dev
          libev-dev libjemalloc-dev libcmocka-dev zlib1g-dev gnuplot-nox)
# The test command also builds and checks Courier against MPICH (scripts/check_install.sh),
# which Debian installs beside Open MPI without changing the default mpicc and mpirun.
# METIS (optional) lets the planner's apps partition with it (--partitioner metis).
# scripts/compare.sh (its --smoke run is a test) builds bale's libraries with the
# autotools and reads the peers' peak memory with /usr/bin/time.
TEST_PACKAGES=(mpich libmpich-dev libmetis-dev autoconf automake libtool time cmake)
DEMO_RANKS=${DEMO_RANKS:-4}

usage() {
    sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'
}

install_missing() {
    local missing=() p
    for p in "${PACKAGES[@]}" "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
            missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "quickstart: installing ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo=sudo
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

mpi_env() {
    if [ "$(id -u)" -eq 0 ]; then
        export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    fi
    export OMPI_MCA_rmaps_base_oversubscribe=1
    export OMPI_MCA_btl_base_warn_component_unused=0
}

# build DIR [meson options...]: configure once, then (re)build
build() {
    local dir=$1
    shift
    if [ ! -f "$dir/build.ninja" ]; then
        meson setup "$dir" "$@"
    fi
    ninja -C "$dir"
}

# timed WHAT COMMAND...: runs it, then says how long it took
timed() {
    local what=$1 t0=$SECONDS
    shift
    "$@"
    echo "quickstart: $what took $(( (SECONDS - t0) / 60 ))m$(( (SECONDS - t0) % 60 ))s"
}

cmd=${1:-help}
case "$cmd" in
demo)
    install_missing
    build build
    mpi_env
    flags="${*:2}"
    echo "quickstart: BFS on $DEMO_RANKS ranks (apps/bfs ${flags:-with its defaults: R-MAT scale 16, 16 roots}), every search validated"
    mpirun -np "$DEMO_RANKS" build/apps/bfs "${@:2}"
    ;;
test)
    install_missing "${TEST_PACKAGES[@]}"
    timed "the build" build build
    mpi_env
    timed "the suite" meson test -C build --print-errorlogs --no-suite large --no-suite hosts "${@:2}"
    if [ $# -le 1 ]; then
        # independent of each other, and mostly waiting on MPI's start-up: side by
        # side, each one's output shown when both are done
        out=$(mktemp -d)
        timed "the documented commands" scripts/check_doc_commands.py build >"$out/doc" 2>&1 &
        doc_pid=$!
        timed "the install checks" scripts/check_install.sh >"$out/install" 2>&1 &
        install_pid=$!
        failed=0
        wait "$doc_pid" || failed=1
        wait "$install_pid" || failed=1
        cat "$out/doc" "$out/install"
        rm -rf "$out"
        [ "$failed" = 0 ] || exit 1
    fi
    ;;
test-sanitize)
    install_missing
    timed "the build" build build-sanitize -Db_sanitize=address,undefined -Dallocator=system -Dbuildtype=debug
    mpi_env
    # What sanitizers add value to: the unit tests, the simulated scenarios, the
    # fatal cases and the MPI programs at 1 and 3 ranks (suite 'core'). The full
    # rank matrix, the routes and the apps run in the plain build (test).
    timed "the sanitized suite" meson test -C build-sanitize --print-errorlogs --suite unit \
        --suite sim --suite fatal --suite core "${@:2}"
    ;;
test-hosts)
    install_missing util-linux
    timed "the build" build build
    mpi_env
    timed "the suite across hosts" meson test -C build --print-errorlogs --suite hosts "${@:2}"
    ;;
build)
    install_missing
    build build
    ;;
run)
    exec scripts/mpirun.sh "${@:2}"
    ;;
help | -h | --help)
    usage
    ;;
*)
    echo "quickstart: unknown command '$cmd'" >&2
    usage >&2
    exit 2
    ;;
esac
