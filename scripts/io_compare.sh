#!/usr/bin/env bash
# Usage: scripts/io_compare.sh [BUILD] [OLD_REVISION]
#
# The figures of docs/io.md, each a comparison within one run, alternating A B A B
# (three rounds, medians):
#   1. reading a 1 GB text edge list at 2 ranks with cr_graph_read_edges, against
#      the same call in the library at OLD_REVISION (default 922dc6a, where every
#      rank parsed the whole file); and the bytes each rank read (/proc/self/io)
#      against the file's size;
#   2. delivering every line of that file at 2 ranks, a call per line
#      (apps/io_bench --mode lines) and in runs of lines (--mode runs), per rank,
#      each run checked to deliver wc -l's count of lines (--expect-lines); each
#      with every line followed by a NUL (the reader copies the file into a buffer)
#      and with --unterminated (the reader maps the file); against the same count
#      made in the same process on the same clock (--mode count: each rank read()s
#      its half and counts newlines with memchr), and, for reference, `wc -l` on the
#      whole file timed with a nanosecond clock (its process start included);
#   3. saving and loading a counting set of 10M keys at 2 ranks (apps/io_bench --mode
#      save) against dd writing and reading as many bytes (both to new files, timed
#      by dd itself); and, to read the load's figure by, how fast this machine
#      hands out new memory: 256 MiB mapped and touched (huge pages asked for, as a
#      table's), about what the two ranks' tables of the load take, after a pause of
#      5 s (a virtual machine may have given freed memory back to its host by then,
#      and a job's new tables come from there) and at once again.
# BUILD is a release build (default build-release). The old library is built in a
# scratch directory from a git worktree; the inputs go to TMPDIR (2 GB free needed).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build-release}
OLD=${2:-922dc6a}
RUN=scripts/mpirun.sh
WORK=$(mktemp -d "${TMPDIR:-/tmp}/courier-io-compare-XXXXXX")
trap 'git worktree remove --force "$WORK/old" >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT
[ -x "$BUILD/apps/io_bench" ] || { echo "io_compare: build $BUILD first (meson setup $BUILD --buildtype=release)" >&2; exit 2; }

echo "io_compare: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(git rev-parse --short HEAD) against $OLD"

# The input: 64M random edges among 4M vertices, "u v" per line (about 1 GB).
cat > "$WORK/gen.c" <<'EOF'
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv)
{
    uint64_t m = strtoull(argv[1], 0, 10), n = strtoull(argv[2], 0, 10);
    uint64_t x = 88172645463325252ull;
    static char buf[1 << 20];
    setvbuf(stdout, buf, _IOFBF, sizeof buf);
    printf("# random edges\n");
    for (uint64_t i = 0; i < m; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        printf("%llu %llu\n", (unsigned long long)((x >> 3) % n),
               (unsigned long long)((x >> 35) % n));
    }
    return argc < 3;
}
EOF
cc -O2 -o "$WORK/gen" "$WORK/gen.c"

# New memory: what a table costs before anything is put into it.
cat > "$WORK/touch.c" <<'EOF'
#include <stdio.h>
#include <sys/mman.h>
#include <time.h>
int main(void)
{
    size_t n = (size_t)256 << 20;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return 1;
    (void)madvise(p, n, MADV_HUGEPAGE);
    for (size_t i = 0; i < n; i += 4096)
        p[i] = 1;
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("%.4f\n", (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9);
    return 0;
}
EOF
cc -O2 -o "$WORK/touch" "$WORK/touch.c"
"$WORK/gen" 67108864 4194304 > "$WORK/edges.el"
cat "$WORK/edges.el" > /dev/null # cached, as for every run below

# The reader, the same source against either library.
cat > "$WORK/read.c" <<'EOF'
#include <courier.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/stat.h>
static uint64_t rchar(void)
{
    FILE *f = fopen("/proc/self/io", "r");
    char l[128];
    uint64_t v = 0;
    while (f && fgets(l, sizeof l, f))
        if (sscanf(l, "rchar: %" SCNu64, &v) == 1)
            break;
    if (f)
        fclose(f);
    return v;
}
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int r, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    struct stat st;
    stat(argv[1], &st);
    MPI_Barrier(MPI_COMM_WORLD);
    uint64_t before = rchar();
    double t = MPI_Wtime();
    cr_edge_list l;
    char err[256];
    int rc = cr_graph_read_edges(argv[1], CR_FILE_TEXT, NULL, r, p, &l, err, sizeof err);
    t = MPI_Wtime() - t;
    double slowest;
    MPI_Reduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    uint64_t read = rchar() - before, most;
    MPI_Reduce(&read, &most, 1, MPI_UINT64_T, MPI_MAX, 0, MPI_COMM_WORLD);
    if (r == 0)
        printf("%.4f %.3f\n", slowest, (double)most / (double)st.st_size);
    if (rc)
        fprintf(stderr, "%s\n", err);
    MPI_Finalize();
    return rc != 0;
}
EOF
libs="-l:libev.a -lz -lm -ldl"
mpicc -O2 -std=c11 -D_GNU_SOURCE -Iinclude "$WORK/read.c" "$BUILD/src/libcourier.a" $libs -o "$WORK/read_new"
git worktree add -q --detach "$WORK/old" "$OLD"
(cd "$WORK/old" && meson setup build --buildtype=release -Dtests=false -Dapps=false >/dev/null &&
    ninja -C build src/libcourier.a >/dev/null)
mpicc -O2 -std=c11 -D_GNU_SOURCE -I"$WORK/old/include" "$WORK/read.c" "$WORK/old/build/src/libcourier.a" \
    $libs -o "$WORK/read_old"

median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
# a command's wall time from a nanosecond clock (its process start included)
seconds() { local t0; t0=$(date +%s%N); "$@" >/dev/null; echo "$(( $(date +%s%N) - t0 ))" | awk '{printf "%.4f\n", $1 / 1e9}'; }
# dd's own timing (microseconds; /usr/bin/time has only hundredths)
dd_seconds() { dd "$@" 2>&1 | sed -n 's/.*copied, \([0-9.e-]*\) s,.*/\1/p'; }

: > "$WORK/old.t"; : > "$WORK/new.t"; : > "$WORK/new.r"; : > "$WORK/old.r"
for round in 1 2 3; do
    $RUN -np 2 "$WORK/read_old" "$WORK/edges.el" | tee -a "$WORK/old.r" | cut -d' ' -f1 >> "$WORK/old.t"
    $RUN -np 2 "$WORK/read_new" "$WORK/edges.el" | tee -a "$WORK/new.r" | cut -d' ' -f1 >> "$WORK/new.t"
done
old_t=$(median < "$WORK/old.t"); new_t=$(median < "$WORK/new.t")
new_read=$(cut -d' ' -f2 "$WORK/new.r" | sort -g | tail -n 1)
old_read=$(cut -d' ' -f2 "$WORK/old.r" | sort -g | tail -n 1)

: > "$WORK/wc.t"; : > "$WORK/count.r"; : > "$WORK/lines.r"; : > "$WORK/runs.r"; : > "$WORK/lines-u.r"; : > "$WORK/runs-u.r"
nlines=$(wc -l < "$WORK/edges.el")
# io_bench MODE [FLAGS]: one run checked to deliver every line; its seconds
io_lines() {
    local out
    out=$($RUN -np 2 "$BUILD/apps/io_bench" --mode "$@" --reps 1 --expect-lines "$nlines" "$WORK/edges.el") ||
        { echo "io_compare: io_bench --mode $*: $out" >&2; exit 1; }
    echo "$out" | sed -n 's/.*lines: \([0-9.]*\) s.*/\1/p'
}
for round in 1 2 3; do
    seconds wc -l "$WORK/edges.el" >> "$WORK/wc.t"
    io_lines count >> "$WORK/count.r"
    for mode in lines runs; do
        io_lines $mode >> "$WORK/$mode.r"
        io_lines $mode --unterminated >> "$WORK/$mode-u.r"
    done
done
wc_t=$(median < "$WORK/wc.t"); count_t=$(median < "$WORK/count.r")
lines_t=$(median < "$WORK/lines.r"); runs_t=$(median < "$WORK/runs.r")
lines_u=$(median < "$WORK/lines-u.r"); runs_u=$(median < "$WORK/runs-u.r")

: > "$WORK/ddw.t"; : > "$WORK/ddr.t"; : > "$WORK/save.t"; : > "$WORK/load.t"; : > "$WORK/touch.t"; : > "$WORK/again.t"
for round in 1 2 3; do
    rm -f "$WORK/dd.out"
    dd_seconds if=/dev/zero of="$WORK/dd.out" bs=1M count=160 >> "$WORK/ddw.t"
    dd_seconds if="$WORK/dd.out" of=/dev/null bs=1M >> "$WORK/ddr.t"
    out=$($RUN -np 2 "$BUILD/apps/io_bench" --mode save --keys 10M --reps 1 --dir "$WORK/save$round")
    echo "$out" | grep -q "every key with its count" || { echo "io_compare: $out" >&2; exit 1; }
    echo "$out" | sed -n 's/.*save \([0-9.]*\) s.*/\1/p' >> "$WORK/save.t"
    echo "$out" | sed -n 's/.*load \([0-9.]*\) s.*/\1/p' >> "$WORK/load.t"
    rm -rf "$WORK/save$round"
    sleep 5
    "$WORK/touch" >> "$WORK/touch.t"
    "$WORK/touch" >> "$WORK/again.t"
done
ddw=$(median < "$WORK/ddw.t"); ddr=$(median < "$WORK/ddr.t")
save_t=$(median < "$WORK/save.t"); load_t=$(median < "$WORK/load.t"); touch_t=$(median < "$WORK/touch.t"); again_t=$(median < "$WORK/again.t")

mib=$(stat -c %s "$WORK/edges.el" | awk '{printf "%.1f", $1 / 1048576}')
awk -v mib="$mib" -v o="$old_t" -v n="$new_t" -v nr="$new_read" -v or_="$old_read" -v w="$wc_t" -v c="$count_t" -v l="$lines_t" -v ru="$runs_t" -v lu="$lines_u" -v ruu="$runs_u" \
    -v dw="$ddw" -v dr="$ddr" -v s="$save_t" -v ld="$load_t" -v nm="$touch_t" -v na="$again_t" 'BEGIN {
    printf "| measurement (2 ranks, medians of 3) | Courier | baseline | ratio |\n|---|---|---|---|\n"
    printf "| read a %.0f MiB edge list: time | %.2f s | %.2f s (before byte ranges) | %.2f |\n", mib, n, o, n / o
    printf "| read a 1 GB edge list: most bytes a rank read / file | %.3f | %.3f | |\n", nr, or_
    printf "| count the newlines, read() and memchr, each rank its half: bytes per second per rank | %.0f MiB/s | %.0f MiB/s (wc -l, one process, whole file) | %.2f |\n", mib / 2 / c, mib / w, w / (2 * c)
    printf "| deliver its lines: bytes per second per rank | %.0f MiB/s | %.0f MiB/s (the count above) | %.2f |\n", mib / 2 / l, mib / 2 / c, c / l
    printf "| deliver its lines in runs: bytes per second per rank | %.0f MiB/s | %.0f MiB/s (the count) | %.2f |\n", mib / 2 / ru, mib / 2 / c, c / ru
    printf "| deliver its lines, unterminated: bytes per second per rank | %.0f MiB/s | %.0f MiB/s (the count) | %.2f |\n", mib / 2 / lu, mib / 2 / c, c / lu
    printf "| deliver its lines in runs, unterminated: bytes per second per rank | %.0f MiB/s | %.0f MiB/s (the count) | %.2f |\n", mib / 2 / ruu, mib / 2 / c, c / ruu
    printf "| save a 10M-key counting set (160 MiB): rate | %.0f MiB/s | %.0f MiB/s (dd write) | %.2f |\n", 160 / s, 160 / dw, dw / s
    printf "| load it back: rate | %.0f MiB/s | %.0f MiB/s (dd read, cached) | %.2f |\n", 160 / ld, 160 / dr, dr / ld
    printf "| new memory (256 MiB mapped and touched, one process), after 5 s idle / at once again: rate | | %.0f / %.0f MiB/s | |\n", 256 / nm, 256 / na
}'
