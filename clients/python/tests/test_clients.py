"""The same calls on every kind of redis-py client: pipelines (with and
without MULTI), a pipeline wrapped directly, RedisCluster and its pipeline,
and redis.asyncio's client, pipeline and cluster."""

import asyncio
import time

import pytest
import redis
import redis.asyncio

from servers import aclose
from redis_recipes import Recipes

HOUR = 3_600_000
AT = int(time.time() * 1000)


def one_of_each(rec, tag=""):
    """One call per family (keys in one slot when ``tag`` is a hash tag): the
    replies on a client, the pipeline itself on a pipeline."""
    return [
        rec.rv.add(f"{tag}viewed", "item:7", at=AT),
        rec.tl.push(f"{tag}timeline", "post:1"),
        rec.topn.incr(f"{tag}lookups", "+1555", by=3, at=AT),
        rec.topn.top(f"{tag}lookups", at=AT, withcounts=True),
        rec.topn.info(f"{tag}lookups"),
        rec.ulist.create(f"{tag}users", value="user_id", partition="day"),
        rec.ulist.add(f"{tag}users", user_id=11, day="2013-08-10"),
        rec.ulist.data(f"{tag}users"),
        rec.hcounter.create(f"{tag}revenue", partition="day", float_mode=True),
        rec.hcounter.incrby(f"{tag}revenue", 2.5, day="2013-08-10"),
        rec.hcounter.data(f"{tag}revenue"),
    ]


def check_one_of_each(results):
    assert results[:4] == [1, 1, 3, [(b"+1555", 3)]]
    info = results[4]
    assert (info.members, info.bucket, info.align, info.views) == (1, 3600, 0, [])
    assert info.capacity is None
    assert results[5:] == [
        True,
        True,
        [{"user_id": b"11", "day": b"2013-08-10"}],
        True,
        2.5,
        [{"day": b"2013-08-10", "value": 2.5}],
    ]


def test_pipeline_with_and_without_transaction(rec, r):
    for transaction in (True, False):
        r.flushall()
        with rec.pipeline(transaction=transaction) as pipe:
            one_of_each(pipe)
            pipe.client.set("plain", "x")  # other commands mix in
            results = pipe.execute()
        check_one_of_each(results[:-1])
        assert results[-1] is True


def test_methods_on_a_pipeline_object(r):
    pipe = r.pipeline()
    one_of_each(Recipes(pipe))
    check_one_of_each(pipe.execute())


def test_raw_calls_stay_raw(rec, r):
    rec.topn.incr("t", "a", at=AT)
    assert r.execute_command("TOPN.TOP", "t", "AT", AT, "WITHCOUNTS") == [b"a", 1]


def test_decode_responses(server):
    client = redis.Redis(port=server.port, decode_responses=True)
    client.flushall()
    rec = Recipes(client)
    rec.hcounter.create("c", partition="day", group="city")
    rec.hcounter.incr("c", day="d1", city="c1")
    assert rec.hcounter.data("c") == [{"day": "d1", "city": "c1", "value": 1}]
    rec.topn.incr("t", "b", at=AT)
    rec.topn.incr("t", "a", at=AT)
    assert rec.topn.top("t", at=AT, withcounts=True) == [("a", 1), ("b", 1)]


def test_cluster_client_and_pipeline(rc):
    rec = Recipes(rc)
    queue = []
    for i in range(12):  # keys spread over the nodes
        assert rec.topn.incr(f"lookups:{i}", "m", by=i + 1, at=AT) == i + 1
        queue.append(f"lookups:{i}")
    assert [rec.topn.top(k, at=AT, withcounts=True) for k in queue] == [
        [(b"m", i + 1)] for i in range(12)
    ]
    check_one_of_each(one_of_each(rec, "{a}"))
    pipe = rec.pipeline()
    one_of_each(pipe, "{b}")
    check_one_of_each(pipe.execute())


def test_asyncio_client_pipeline_and_cluster(server, cluster, protocol):
    async def main():
        client = redis.asyncio.Redis(port=server.port, protocol=protocol)
        await client.flushall()
        rec = Recipes(client)
        assert await rec.topn.incr("t", "a", by=2, at=AT) == 2
        assert await rec.topn.top("t", at=AT, withcounts=True) == [(b"a", 2)]
        assert await rec.topn.create("v", window=12, views=[3]) is True
        assert (await rec.topn.info("v")).view_memory == {3: 0}
        await rec.ulist.create("l", value="v")
        assert await rec.ulist.add("l", v=1) is True
        assert await rec.ulist.has("l", v=1) is True
        async with rec.pipeline() as pipe:
            one_of_each(pipe)
            check_one_of_each(await pipe.execute())
        await aclose(client)

        rc = redis.asyncio.RedisCluster(
            host="127.0.0.1", port=cluster.nodes[0].port, protocol=protocol
        )
        await rc.flushall(target_nodes=redis.asyncio.RedisCluster.PRIMARIES)
        rec = Recipes(rc)
        for i in range(6):
            assert await rec.topn.incr(f"k{i}", "m", at=AT) == 1
        assert await rec.topn.count("k5", "m", at=AT) == [1]
        pipe = rec.pipeline()
        one_of_each(pipe, "{c}")
        check_one_of_each(await pipe.execute())
        await aclose(rc)

    asyncio.run(main())


def test_errors_in_pipelines_surface_as_response_errors(rec, rc):
    for recipes in (rec, Recipes(rc)):
        recipes.topn.create("t:{x}")
        pipe = recipes.pipeline(transaction=False)
        pipe.topn.create("t:{x}", bucket=60)
        with pytest.raises(redis.ResponseError, match="exists"):
            pipe.execute()
        pipe.topn.create("t:{x}", bucket=60)
        pipe.topn.count("t:{x}", "m")
        error, counts = pipe.execute(raise_on_error=False)
        assert isinstance(error, redis.ResponseError) and counts == [0]
