"""ShardedTopN on a real 3-node cluster: one shard per node, INCR on one key,
and a merged top that equals a model of the events exactly."""

import asyncio
import random
import time
from collections import Counter

import pytest
import redis
import redis.asyncio
from redis.crc import key_slot

from servers import aclose
from redis_recipes import AsyncShardedTopN, Recipes, ShardedTopN, shard_tags

MINUTE = 60_000


def model_top(events, at, last, window, n):
    """The top n by (count desc, member asc) of the events in the ``last``
    newest of ``window`` one-minute buckets ending at ``at``'s bucket."""
    newest = at // MINUTE
    oldest = newest - (last or window) + 1
    counts = Counter()
    for member, ts, by in events:
        if oldest <= ts // MINUTE <= newest:
            counts[member] += by
    rows = [(m.encode(), c) for m, c in counts.items() if c != 0]
    return sorted(rows, key=lambda r: (-r[1], r[0]))[:n]


def test_three_shards_sit_on_three_nodes(cluster):
    slots = [key_slot(f"hot:{{{t}}}".encode()) for t in shard_tags(3)]
    assert len({cluster.node_of_slot(s) for s in slots}) == 3
    # why the tags are chosen: the plain ones put two of three on one node
    plain = [key_slot(f"hot:{{{i}}}".encode()) for i in range(3)]
    assert len({cluster.node_of_slot(s) for s in plain}) < 3
    # and as many shards as nodes spread evenly for other sizes too
    for k in (2, 6, 9):
        nodes = Counter(cluster.node_of_slot(key_slot(b"{%s}" % t.encode())) for t in shard_tags(k))
        assert sorted(nodes.values()) == ([k // 3] * 3 if k % 3 == 0 else [1, 1])


def test_merged_top_is_exact_against_a_model(cluster, rc):
    hot = ShardedTopN(rc, "hot", shards=3)
    hot.create(bucket=60, window=10, views=[4])
    hot.create(bucket=60, window=10, views=[4])  # the same declaration again: fine
    with pytest.raises(redis.ResponseError, match="exists"):
        hot.create(bucket=30, window=10, views=[4])
    with pytest.raises(redis.ResponseError, match="VIEWS 4"):
        hot.create(bucket=60, window=10)  # every shard has the view
    rng = random.Random(16)
    now = int(time.time() * 1000)
    members = [f"+1555{i:04d}" for i in range(300)]
    weights = [1 / (i + 1) for i in range(len(members))]  # a few hot members, a long tail
    events = []
    for _ in range(3000):
        member = rng.choices(members, weights)[0]
        at = now - rng.randrange(8 * MINUTE)
        by = rng.randint(1, 5)
        events.append((member, at, by))
        assert hot.incr(member, by=by, at=at) >= by
    # each member lives on exactly one node, in its own shard
    for node in cluster.nodes:
        with redis.Redis(port=node.port) as c:
            assert len(c.keys("hot:*")) == 1
    direct = Recipes(rc)
    for member in members[:20]:
        others = [k for k in hot.keys if k != hot.key_of(member)]
        assert all(direct.topn.count(k, member, at=now) == [0] for k in others)
    for at in (now, now - 3 * MINUTE):
        for last in (None, 1, 4):
            for n in (1, 5, 10, 50, 400):
                assert hot.top(n, at=at, last=last) == model_top(events, at, last, 10, n)
    before = int(time.time() * 1000)
    default_at = hot.top(10)  # at the client's clock, one AT for every shard
    after = int(time.time() * 1000)
    assert default_at in (model_top(events, t, None, 10, 10) for t in (before, after))
    asked = members[::7] + ["never-seen"]
    expected = Counter()
    for member, _, by in events:
        expected[member] += by
    assert hot.count(*asked, at=now) == [expected[m] for m in asked]
    assert hot.count(members[0], at=now, last=1) == [
        dict(model_top(events, now, 1, 10, 400)).get(members[0].encode(), 0)
    ]


def test_async_sharded_top_on_the_cluster(cluster, protocol):
    async def main():
        rc = redis.asyncio.RedisCluster(
            host="127.0.0.1", port=cluster.nodes[0].port, protocol=protocol
        )
        await rc.flushall(target_nodes=redis.asyncio.RedisCluster.PRIMARIES)
        hot = AsyncShardedTopN(rc, "ahot", shards=3)
        await hot.create()
        now = int(time.time() * 1000)
        for i in range(30):
            await hot.incr(f"m{i % 7}", by=i, at=now)
        events = [(f"m{i % 7}", now, i) for i in range(30)]
        assert await hot.top(5, at=now) == model_top(events, now, None, 24 * 60, 5)
        assert await hot.count("m1", "m0", at=now) == [1 + 8 + 15 + 22 + 29, 0 + 7 + 14 + 21 + 28]
        await aclose(rc)

    asyncio.run(main())


def test_on_one_server_too(rec):
    hot = ShardedTopN(rec, "local", shards=4)
    now = int(time.time() * 1000)
    for member, by in (("a", 3), ("b", 3), ("c", 5), ("d", 1)):
        hot.incr(member, by=by, at=now)
    assert hot.top(3, at=now) == [(b"c", 5), (b"a", 3), (b"b", 3)]
    assert len({hot.key_of(m) for m in "abcdefgh"}) > 1


def test_shard_count_is_bounded():
    with pytest.raises(ValueError):
        shard_tags(0)
    with pytest.raises(ValueError):
        shard_tags(257)
