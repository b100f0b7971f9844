#!/usr/bin/env bash
# Installs the .deb (`make deb`) with dpkg as an operator would, starts the
# system's redis-server on a free loopback port with a config that loads
# /usr/lib/redis/modules/librecipes.so, runs one command of each family,
# stops the server by pid and removes the package. Needs root (or sudo).
set -euo pipefail
deb=${1:?usage: $0 <redis-recipes_*.deb>}
sudo=""
if [ "$(id -u)" != 0 ]; then sudo=sudo; fi
module=/usr/lib/redis/modules/librecipes.so
if [ -e "$module" ] && ! dpkg -s redis-recipes >/dev/null 2>&1; then
    echo "test-deb: $module exists and no package owns it: not touching it" >&2
    exit 1
fi
dir=$(mktemp -d)
pid=""
cleanup() {
    if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
    $sudo dpkg -r redis-recipes >/dev/null 2>&1 || true
    rm -rf "$dir"
}
trap cleanup EXIT
$sudo dpkg -i "$deb" >/dev/null
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$dir/redis.conf" <<CONF
port $port
bind 127.0.0.1
dir $dir
save ""
loadmodule $module
CONF
redis-server "$dir/redis.conf" >"$dir/log" 2>&1 &
pid=$!
cli() { redis-cli -p "$port" "$@"; }
for _ in $(seq 100); do
    [ "$(cli PING 2>/dev/null)" = PONG ] && break
    sleep 0.1
done
expect() { # expect <reply> <command...>
    local want=$1 got
    shift
    got=$(cli "$@" 2>&1) || true
    if [ "$got" != "$want" ]; then
        echo "test-deb: $*: got '$got', want '$want'" >&2
        cat "$dir/log" >&2
        exit 1
    fi
}
expect 1 RV.ADD deb:rv item:1
expect 1 TL.PUSH deb:tl post:1
expect 5 TOPN.INCR deb:topn alice BY 5
expect OK ULIST.CREATE deb:ul VALUE user
expect 1 ULIST.ADD deb:ul user u1
expect OK HCOUNTER.CREATE deb:hc PARTITION day
expect 1 HCOUNTER.INCR deb:hc day d1
[ -f /usr/share/doc/redis-recipes/recipes.conf ] || {
    echo "test-deb: no conf snippet installed" >&2
    exit 1
}
echo "test-deb: $(basename "$deb") installed, loaded by $(redis-server --version | cut -d' ' -f1-3), one command of each family ok, removed"
