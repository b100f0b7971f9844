"""What the client costs, as ratios measured interleaved in one run (medians of
7 rounds): a typed call against the same command through ``execute_command``,
one at a time and pipelined, and ShardedTopN(3) against one TOPN key on a
3-node cluster. Prints ratios, asserts nothing.

    RECIPES_MODULE=target/release/librecipes.so \\
        target/clients-venv/bin/python clients/python/bench.py
"""

import statistics
import sys
import time
from pathlib import Path

import redis

sys.path.insert(0, str(Path(__file__).parent / "tests"))
from servers import Cluster, Server  # noqa: E402

from redis_recipes import Recipes, ShardedTopN  # noqa: E402

ROUNDS = 7


def ratio(base, other, n):
    """Median over ROUNDS of other's throughput / base's, run alternately."""
    ratios = []
    for _ in range(ROUNDS):
        t = time.perf_counter()
        base(n)
        a = time.perf_counter() - t
        t = time.perf_counter()
        other(n)
        ratios.append(a / (time.perf_counter() - t))
    return statistics.median(ratios)


def typed_against_raw(r, rec):
    """(one at a time, pipelined) throughput ratios of TOPN.TOP 10 WITHCOUNTS."""

    def raw(p, n):
        for _ in range(n):
            p.execute_command("TOPN.TOP", "t", 10, "WITHCOUNTS")
        return p

    def typed(p, n):
        for _ in range(n):
            p.topn.top("t", 10, withcounts=True)
        return p

    one = ratio(lambda n: raw(r, n), lambda n: typed(rec, n), 2000)
    piped = ratio(
        lambda n: raw(r.pipeline(transaction=False), n).execute(),
        lambda n: typed(rec.pipeline(transaction=False), n).execute(),
        5000,
    )
    return one, piped


def single_server():
    server = Server()
    try:
        for protocol in (2, 3):
            r = redis.Redis(port=server.port, protocol=protocol)
            rec = Recipes(r)
            for i in range(1000):
                rec.topn.incr("t", f"m{i}", by=i)
            one, piped = typed_against_raw(r, rec)
            print(
                f"RESP{protocol}: TOPN.TOP 10 WITHCOUNTS typed/raw: one at a time {one:.2f}x, "
                f"pipelined {piped:.2f}x"
            )
    finally:
        server.stop()


def cluster():
    nodes = Cluster()
    try:
        rc = redis.cluster.RedisCluster(host="127.0.0.1", port=nodes.nodes[0].port)
        rec = Recipes(rc)
        hot = ShardedTopN(rc, "hot", shards=3)
        for i in range(3000):
            rec.topn.incr("single", f"m{i}", by=i % 97)
            hot.incr(f"m{i}", by=i % 97)
        top_one = lambda n: [rec.topn.top("single", 10, withcounts=True) for _ in range(n)]  # noqa: E731
        top_sharded = lambda n: [hot.top(10) for _ in range(n)]  # noqa: E731
        incr_one = lambda n: [rec.topn.incr("single", f"m{i}") for i in range(n)]  # noqa: E731
        incr_sharded = lambda n: [hot.incr(f"m{i}") for i in range(n)]  # noqa: E731
        print(
            f"cluster: ShardedTopN(3)/one key: top(10) {ratio(top_one, top_sharded, 500):.2f}x; "
            f"incr {ratio(incr_one, incr_sharded, 2000):.2f}x"
        )
    finally:
        nodes.stop()


if __name__ == "__main__":
    single_server()
    cluster()
