"""Paged reads off a plain client: a pipeline refuses them at once with a
DataError (a page's request needs the reply before it), an asyncio client
pages with ``async for``, plain and cluster; client-side errors are
``redis.DataError`` (and still ``ValueError``)."""

import asyncio

import pytest
import redis
import redis.asyncio

from servers import aclose
from redis_recipes import DataError, Recipes


def fill(rec):
    rec.ulist.create("big", value="v", scope="s")
    rec.hcounter.create("hits", partition="day", group="city")
    for i in range(40):
        rec.ulist.add("big", v=i, s=i % 3)
        rec.hcounter.incr("hits", day=i % 4, city=i)


def test_pipelines_refuse_iterators(rec):
    fill(rec)
    for transaction in (False, True):
        pipe = rec.pipeline(transaction=transaction)
        for iterate in (
            lambda: pipe.ulist.iter_data("big", count=5),
            lambda: pipe.ulist.iter_partitions("big"),
            lambda: pipe.hcounter.iter_data("hits"),
            lambda: pipe.hcounter.iter_partitions("hits", day=1),
        ):
            with pytest.raises(DataError, match="pipeline"):
                iterate()
        assert pipe.execute() == []


def test_asyncio_iterators_page(server, cluster, protocol):
    async def check(arec):
        await arec.ulist.create("{t}big", value="v", scope="s")
        await arec.hcounter.create("{t}hits", partition="day", group="city")
        for i in range(40):
            await arec.ulist.add("{t}big", v=i, s=i % 3)
            await arec.hcounter.incr("{t}hits", day=i % 4, city=i)
        rows = [row async for row in arec.ulist.iter_data("{t}big", count=7)]
        assert sorted(int(row["v"]) for row in rows) == list(range(40))
        assert [row async for row in arec.ulist.iter_partitions("{t}big", count=1)] == (
            await arec.ulist.partitions("{t}big")
        )
        cells = [row async for row in arec.hcounter.iter_data("{t}hits", count=3, day=1)]
        assert sorted(cells, key=repr) == sorted(await arec.hcounter.data("{t}hits", day=1), key=repr)
        days = [row async for row in arec.hcounter.iter_partitions("{t}hits")]
        assert len(days) == 4
        with pytest.raises(DataError, match="pipeline"):
            arec.pipeline().ulist.iter_data("{t}big")

    async def main():
        client = redis.asyncio.Redis(port=server.port, protocol=protocol)
        await client.flushall()
        await check(Recipes(client))
        await aclose(client)
        rc = redis.asyncio.RedisCluster(host="127.0.0.1", port=cluster.nodes[0].port, protocol=protocol)
        await rc.flushall(target_nodes=redis.asyncio.RedisCluster.PRIMARIES)
        await check(Recipes(rc))
        await aclose(rc)

    asyncio.run(main())


def test_client_side_errors_are_redis_errors(rec):
    calls = [
        lambda: rec.rv.add("v", "m", ttl=1, pxat=1),
        lambda: rec.topn.count("t"),
        lambda: rec.ulist.create("l", value=[]),
        lambda: rec.hcounter.create("c", scope="s"),
        lambda: rec.hcounter.incr("c", TTL=1),
    ]
    for call in calls:
        with pytest.raises(redis.DataError) as raised:
            call()
        assert isinstance(raised.value, redis.RedisError) and isinstance(raised.value, ValueError)
