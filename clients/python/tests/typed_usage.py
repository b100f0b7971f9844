"""How a typed program uses the package: ``tests/test_typing.py`` runs
``mypy --strict`` on this file (never run itself). Each ``type: ignore[...]``
must stay an error: ``--strict`` reports an ignore that is not needed, so a
loosened annotation fails the check."""

from __future__ import annotations

from typing import Any, AsyncIterator, Dict, Iterator, List, Tuple

import redis
import redis.asyncio

from redis_recipes import AsyncShardedTopN, DataError, Recipes, TopNInfo


def plain(r: redis.Redis) -> None:
    rec = Recipes(r)
    count: int = rec.topn.incr("lookups", "+1555", by=2)
    top: List[Tuple[Any, int]] = rec.topn.top("lookups", 10, withcounts=True)
    members: List[Any] = rec.topn.top("lookups")
    info: TopNInfo = rec.topn.info("lookups")
    added: bool = rec.ulist.add("users", user_id=1)
    rows: Iterator[Dict[str, Any]] = rec.ulist.iter_data("users", count=100)
    cell: int | float = rec.hcounter.incr("pages", day="d1")
    times: List[Tuple[Any, int]] = rec.rv.get("viewed", withscores=True)
    length: int = rec.tl.len("timeline")
    wrong: str = rec.tl.len("timeline")  # type: ignore[assignment]
    rec.topn.incr("lookups", "+1555", byy=2)  # type: ignore[call-arg]
    try:
        rec.rv.add("viewed", "item", ttl=1, pxat=2)
    except redis.RedisError as e:
        assert isinstance(e, DataError)
    print(count, top, members, info, added, rows, cell, times, length, wrong)


async def asyncio_client(r: redis.asyncio.Redis) -> None:
    arec = Recipes(r)
    count: int = await arec.topn.incr("lookups", "+1555")
    top: List[Tuple[Any, int]] = await arec.topn.top("lookups", withcounts=True)
    info: TopNInfo = await arec.topn.info("lookups")
    added: bool = await arec.ulist.add("users", user_id=1)
    data: List[Dict[str, Any]] = await arec.hcounter.data("pages")
    rows: AsyncIterator[Dict[str, Any]] = arec.hcounter.iter_partitions("pages")
    async for row in arec.ulist.iter_data("users", count=100):
        print(row["user_id"])
    not_awaited: int = arec.topn.incr("lookups", "+1555")  # type: ignore[assignment]
    hot = AsyncShardedTopN(r, "hot", shards=3)
    best: List[Tuple[Any, int]] = await hot.top(10)
    print(count, top, info, added, data, rows, not_awaited, best)
