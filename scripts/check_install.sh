#!/usr/bin/env bash
# Install Courier to a fresh prefix, compile the README's first program against it
# with pkg-config exactly as the README says, run it at 3 ranks and check the counts.
#   scripts/check_install.sh        (quickstart.sh test runs it; about 30 s)
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
meson setup "$tmp/build" --prefix="$prefix" -Dtests=false -Dapps=false >/dev/null
ninja -C "$tmp/build" install >/dev/null
# Debian's multiarch libdir: $prefix/lib/x86_64-linux-gnu/pkgconfig (README, "Installed use")
pcdir=$prefix/$(meson introspect "$tmp/build" --buildoptions |
    python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "libdir"))')/pkgconfig
[ -f "$pcdir/courier.pc" ] || { echo "check_install: no courier.pc in $pcdir" >&2; exit 1; }
awk '/^## A first program/ {f = 1} f && /^```c/ {p = 1; next} p && /^```/ {exit} p' README.md > "$tmp/app.c"
[ -s "$tmp/app.c" ] || { echo "check_install: no C program under 'A first program' in README.md" >&2; exit 1; }
export PKG_CONFIG_PATH=$pcdir
mpicc -std=c11 "$tmp/app.c" -o "$tmp/app" $(pkg-config --cflags --libs courier)
[ -x "$prefix/bin/courier-run" ] || { echo "check_install: courier-run is not installed in $prefix/bin" >&2; exit 1; }
out=$("$prefix/bin/courier-run" -np 3 "$tmp/app")
for r in 0 1 2; do
    grep -qx "rank $r: 3 greetings" <<<"$out" || {
        printf 'check_install: expected "rank %d: 3 greetings", got:\n%s\n' "$r" "$out" >&2
        exit 1
    }
done
echo "check_install: installed to a prefix, courier.pc in lib/<multiarch>/pkgconfig, README program built with mpicc and pkg-config and ran at 3 ranks with courier-run: counts right"
