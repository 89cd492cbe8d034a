#!/usr/bin/env bash
# Install Courier to a fresh prefix, compile the README's first program against it
# with mpicc and pkg-config exactly as the README says, run it at 3 ranks with the
# installed courier-run and check the counts; the same program built by CMake with
# find_package(Courier); courier.pc must name the MPI, and the program compiled with
# another MPI's mpicc must stop with one line. Then, where MPICH is installed beside
# Open MPI, the same with Courier built against MPICH (-Dmpi=mpich), plus the MPI
# test programs at 2 ranks (one at 3) under MPICH's launcher.
#   scripts/check_install.sh        (quickstart.sh test runs it; about 2 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
awk '/^## A first program/ {f = 1} f && /^```c/ {p = 1; next} p && /^```/ {exit} p' README.md > "$tmp/app.c"
[ -s "$tmp/app.c" ] || { echo "check_install: no C program under 'A first program' in README.md" >&2; exit 1; }

# check_greetings WHAT OUTPUT: the README program's output at 3 ranks, every count right.
check_greetings() {
    for r in 0 1 2; do
        grep -qx "rank $r: 3 greetings" <<<"$2" || {
            printf 'check_install (%s): expected "rank %d: 3 greetings", got:\n%s\n' "$1" "$r" "$2" >&2
            exit 1
        }
    done
}

# install_and_run NAME MPICC LAUNCHER [MESON OPTIONS...]
install_and_run() {
    local name=$1 mpicc=$2 launcher=$3
    shift 3
    local prefix=$tmp/prefix-$name build=$tmp/build-$name
    meson setup "$build" --prefix="$prefix" "$@" >/dev/null
    ninja -C "$build" install >/dev/null
    # Debian's multiarch libdir: $prefix/lib/x86_64-linux-gnu/pkgconfig (README)
    local libdir pcdir
    libdir=$(meson introspect "$build" --buildoptions |
        python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "libdir"))')
    pcdir=$prefix/$libdir/pkgconfig
    [ -f "$pcdir/courier.pc" ] || { echo "check_install ($name): no courier.pc in $pcdir" >&2; exit 1; }
    PKG_CONFIG_PATH=$pcdir "$mpicc" -std=c11 "$tmp/app.c" -o "$tmp/app-$name" \
        $(PKG_CONFIG_PATH=$pcdir pkg-config --cflags --libs courier)
    [ -x "$prefix/bin/courier-run" ] || { echo "check_install: courier-run is not installed in $prefix/bin" >&2; exit 1; }
    local out
    if [ "$launcher" = courier-run ]; then
        out=$("$prefix/bin/courier-run" -np 3 "$tmp/app-$name")
    else
        out=$("$launcher" -np 3 "$tmp/app-$name")
    fi
    check_greetings "$name" "$out"
    echo "check_install: $name: installed to a prefix, README program built with $mpicc and pkg-config, ran at 3 ranks: counts right"
}

# with_cmake NAME LAUNCHER [CMAKE OPTIONS...]: the README's program built by CMake with
# find_package(Courier) from the prefix install_and_run NAME made, run at 3 ranks.
with_cmake() {
    local name=$1 launcher=$2 dir=$tmp/cmake-$1 prefix=$tmp/prefix-$1
    shift 2
    command -v cmake >/dev/null || { echo "check_install: cmake is not installed: find_package(Courier) not checked"; return; }
    mkdir -p "$dir"
    cp "$tmp/app.c" "$dir/app.c"
    cat >"$dir/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.16)
project(courier_app C)
find_package(Courier 0.1 REQUIRED)
add_executable(app app.c)
set_property(TARGET app PROPERTY C_STANDARD 11)
target_link_libraries(app PRIVATE Courier::courier)
CMAKE
    # the prefix's bin first on PATH, as a user who installed it has it: nothing there
    # may be taken for the C compiler
    PATH=$prefix/bin:$PATH cmake -S "$dir" -B "$dir/build" -DCMAKE_PREFIX_PATH="$prefix" "$@" \
        >"$dir/log" 2>&1 && PATH=$prefix/bin:$PATH cmake --build "$dir/build" >>"$dir/log" 2>&1 ||
        { cat "$dir/log" >&2; echo "check_install ($name): the CMake build with find_package(Courier) failed" >&2; exit 1; }
    [ "$launcher" = courier-run ] && launcher=$prefix/bin/courier-run
    check_greetings "$name, CMake" "$("$launcher" -np 3 "$dir/build/app")"
    echo "check_install: $name: README program built by CMake with find_package(Courier), ran at 3 ranks: counts right"
}

# check_installed_names NAME: every program in the prefix's bin is called courier-*
# (an app named cc, bc or tc would shadow the system's), and an installed app runs.
check_installed_names() {
    local bin=$tmp/prefix-$1/bin f others=()
    for f in "$bin"/*; do
        case $(basename "$f") in courier-*) ;; *) others+=("$(basename "$f")") ;; esac
    done
    [ ${#others[@]} -eq 0 ] ||
        { echo "check_install ($1): installed without the courier- prefix: ${others[*]}" >&2; exit 1; }
    for f in cc bc tc hello ring plan; do
        [ -x "$bin/courier-$f" ] || { echo "check_install ($1): courier-$f is not installed" >&2; exit 1; }
    done
    "$bin/courier-run" -np 2 "$bin/courier-hello" | grep -q "verified" ||
        { echo "check_install ($1): the installed courier-hello did not run" >&2; exit 1; }
    echo "check_install: $1: $(ls "$bin" | wc -l) programs installed, every one named courier-*; courier-hello ran at 2 ranks"
}

# The default options (the apps installed), the tests left out: they are not installed.
install_and_run openmpi mpicc courier-run -Dtests=false
check_installed_names openmpi
with_cmake openmpi courier-run

# The install records its MPI: courier.pc names it, and a program compiled with
# another MPI's mpicc stops at compile time with one line.
pc_openmpi=$(find "$tmp/prefix-openmpi" -name courier.pc -printf '%h')
[ "$(PKG_CONFIG_PATH=$pc_openmpi pkg-config --variable=mpi courier)" = openmpi ] ||
    { echo "check_install: courier.pc does not record mpi=openmpi" >&2; exit 1; }
if command -v mpicc.mpich >/dev/null; then
    if out=$(mpicc.mpich -std=c11 -c "$tmp/app.c" -o "$tmp/app-wrong.o" \
        $(PKG_CONFIG_PATH=$pc_openmpi pkg-config --cflags courier) 2>&1); then
        echo "check_install: a program compiled with MPICH against an Open MPI Courier built" >&2
        exit 1
    fi
    grep -q "Courier was built with Open MPI" <<<"$out" ||
        { printf 'check_install: the wrong MPI gave no clear error:\n%s\n' "$out" >&2; exit 1; }
    echo "check_install: courier.pc records mpi=openmpi; mpicc.mpich against it stops: $(grep -o 'Courier was built with Open MPI[^"]*' <<<"$out" | head -n 1)"
fi

if pkg-config --exists mpich && command -v mpicc.mpich >/dev/null && command -v mpiexec.mpich >/dev/null; then
    install_and_run mpich mpicc.mpich mpiexec.mpich -Dmpi=mpich -Dtests=true -Dapps=false
    [ "$(PKG_CONFIG_PATH=$(find "$tmp/prefix-mpich" -name courier.pc -printf '%h') \
        pkg-config --variable=mpi courier)" = mpich ] ||
        { echo "check_install: courier.pc does not record mpi=mpich" >&2; exit 1; }
    with_cmake mpich mpiexec.mpich -DMPI_C_COMPILER=mpicc.mpich
    ninja -C "$tmp/build-mpich" >/dev/null
    # Every MPI program at 2 ranks, and one at 3 (an odd count): MPICH's ranks poll
    # while they wait, so on a machine with fewer cores than ranks each of the others
    # would take 20 to 50 seconds at 3 ranks instead of 1 to 5 at 2.
    tests=("exchange np=3")
    for program in mailbox exchange bfs coll dedup requests darray; do
        tests+=("$program np=2")
    done
    meson test -C "$tmp/build-mpich" --print-errorlogs "${tests[@]}" >"$tmp/mpich-tests.log" 2>&1 || {
        cat "$tmp/mpich-tests.log" >&2
        echo "check_install: the MPI tests failed under MPICH" >&2
        exit 1
    }
    echo "check_install: mpich: $(grep -E '^Ok:' "$tmp/mpich-tests.log" | tr -s ' ') MPI tests (every program at 2 ranks, exchange at 3) under mpiexec.mpich"
else
    echo "check_install: MPICH not installed (Debian: mpich libmpich-dev): its build was not checked"
fi
