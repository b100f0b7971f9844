#!/usr/bin/env bash
# Builds target/debian/redis-recipes_<version>_amd64.deb from the release
# module (`make deb`): the module in /usr/lib/redis/modules/ (where Debian's
# module packages put theirs), the docs and a commented config snippet in
# /usr/share/doc/redis-recipes/. Needs dpkg-deb (Debian's dpkg).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$repo/Cargo.toml" | head -n 1)
arch=$(dpkg --print-architecture)
so="$repo/target/release/librecipes.so"
[ -f "$so" ] || {
    echo "build-deb: no $so (cargo build --release first)" >&2
    exit 1
}
out="$repo/target/debian"
root="$out/redis-recipes_${version}_$arch"
rm -rf "$root"
mkdir -p "$root/DEBIAN" "$root/usr/lib/redis/modules" "$root/usr/share/doc/redis-recipes"
# Debug info stays in the build tree; the package ships the stripped module.
objcopy --strip-debug "$so" "$root/usr/lib/redis/modules/librecipes.so"
# Redis refuses to load a module without execute permission.
chmod 755 "$root/usr/lib/redis/modules/librecipes.so"
doc="$root/usr/share/doc/redis-recipes"
cp "$repo/README.md" "$doc/"
cp -r "$repo/docs" "$doc/docs"
rm -f "$doc/docs/check.py"
cp "$repo/packaging/recipes.conf" "$doc/recipes.conf"
cat >"$doc/copyright" <<COPYRIGHT
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: recipes
License: BSD-3-Clause
COPYRIGHT
size=$(du -sk "$root/usr" | cut -f1)
cat >"$root/DEBIAN/control" <<CONTROL
Package: redis-recipes
Version: $version
Architecture: $arch
Maintainer: recipes developers <recipes@localhost>
Installed-Size: $size
Depends: libc6, redis-server (>= 5:7.0) | valkey-server
Section: database
Priority: optional
Description: Redis module: five Redis recipes as native, atomic commands
 RV (recency lists), TL (capped timelines), TOPN (exact top-N over a sliding
 window), HCOUNTER (partitioned, grouped counters with unique counting) and
 ULIST (unique-value lists with per-value expiry), for Redis 7.0+ and Valkey
 8+. Load it with one line in redis.conf:
 loadmodule /usr/lib/redis/modules/librecipes.so
CONTROL
dpkg-deb --root-owner-group --build "$root" "$out/redis-recipes_${version}_$arch.deb" >/dev/null
echo "$out/redis-recipes_${version}_$arch.deb"
