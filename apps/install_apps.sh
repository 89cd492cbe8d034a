#!/bin/sh
# Usage (meson install runs it): install_apps.sh BINDIR APP...
# Installs each built app as courier-NAME in DESTDIR/PREFIX/BINDIR, so that no
# installed program takes a system tool's name (cc, bc, tc).
set -eu
bindir=$1
shift
case "$bindir" in
/*) dest=${DESTDIR:-}$bindir ;;
*) dest=$MESON_INSTALL_DESTDIR_PREFIX/$bindir ;;
esac
mkdir -p "$dest"
for exe in "$@"; do
    name=$(basename "$exe")
    install -m 755 "$exe" "$dest/courier-$name"
    echo "Installing $exe to $dest/courier-$name"
done
