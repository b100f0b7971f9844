"""Exact top-N over a TOPN split across K keys, for a top-N too hot for one node.

Each member lives in exactly one shard, chosen by a stable hash of the member
(CRC-32 of its bytes, modulo K). So:

- ``incr`` is one command on one key: one round trip, as on a single TOPN.
- ``top(n)`` asks every shard for its n highest, WITHCOUNTS, all at the same
  ``AT``, and merges them by (count descending, member ascending), the order
  TOPN itself uses. That is exact: a member's count is whole in its shard, and
  any member of the global top n has at most n-1 members ranked above it in
  its own shard (each of those ranks above it globally too), so it is in that
  shard's top n. A split by time or by event instead would leave partial counts
  for one member on several shards, and a merged top from partial tops could
  miss members whose parts each rank low.

The keys are ``name:{tag}`` with one hash tag per shard, chosen so that shard i
of K sits in the middle of the i-th of K equal ranges of the 16384 cluster slots:
with K equal to the number of masters of a cluster made by
``redis-cli --cluster create``, every shard is on its own node. (The plain tags
``{0}``, ``{1}``, ``{2}`` would not do: ``{1}`` and ``{2}`` hash to slots 9842
and 5649, the same node of three.) K is part of the data: the same name with
another K is another set of keys.
"""

from __future__ import annotations

import functools
import heapq
import itertools
import time
import zlib
from typing import Any, Awaitable, Dict, List, Optional, Sequence, Tuple, cast

from redis.crc import REDIS_CLUSTER_HASH_SLOTS, key_slot

from ._family import DataError
from .client import Recipes

MAX_SHARDS = 256


@functools.lru_cache(maxsize=64)
def shard_tags(shards: int) -> Tuple[str, ...]:
    """The hash tag of each of ``shards`` shards: ``str(i)``, else the first
    ``f"{i}.{j}"`` (j = 1, 2, ...) whose slot is within an eighth of a range of
    the middle of the i-th of ``shards`` equal slot ranges."""
    if not 1 <= shards <= MAX_SHARDS:
        raise DataError(f"shards must be 1..{MAX_SHARDS}, got {shards}")
    width = REDIS_CLUSTER_HASH_SLOTS / shards
    return tuple(_tag_near(i, (i + 0.5) * width, width / 8) for i in range(shards))


def _tag_near(i: int, slot: float, within: float) -> str:
    candidates = itertools.chain([str(i)], (f"{i}.{j}" for j in itertools.count(1)))
    return next(t for t in candidates if abs(key_slot(b"{%s}" % t.encode()) - slot) <= within)


def _member_bytes(member: Any) -> bytes:
    # as redis-py encodes arguments
    if isinstance(member, bytes):
        return member
    if isinstance(member, str):
        return member.encode()
    if isinstance(member, (int, float)):
        return repr(member).encode()
    raise TypeError(f"a member is bytes, str, int or float, got {type(member).__name__}")


def _merge(replies: Sequence[List[Tuple[Any, int]]], n: int) -> List[Tuple[Any, int]]:
    return heapq.nsmallest(
        n, (row for reply in replies for row in reply), key=lambda r: (-r[1], r[0])
    )


class _ShardedTopN:
    """Routing, arguments and merging, shared by the sync and asyncio classes."""

    def __init__(self, client: Any, name: str, shards: int) -> None:
        self.recipes: Recipes[Any] = client if isinstance(client, Recipes) else Recipes(client)
        self.name = name
        self.keys: List[str] = [f"{name}:{{{tag}}}" for tag in shard_tags(shards)]

    def shard_of(self, member: Any) -> int:
        return zlib.crc32(_member_bytes(member)) % len(self.keys)

    def key_of(self, member: Any) -> str:
        """The key holding ``member``."""
        return self.keys[self.shard_of(member)]

    def _queue_create(
        self, bucket: Optional[int], window: Optional[int], views: Sequence[int]
    ) -> Recipes[Any]:
        pipe = self.recipes.pipeline(transaction=False)
        for key in self.keys:
            pipe.topn.create(key, bucket=bucket, window=window, views=views)
        return pipe

    def _queue_top(self, n: int, at: Optional[int], last: Optional[int]) -> Recipes[Any]:
        # one AT for every shard, so all of them read the same window
        at = int(time.time() * 1000) if at is None else at
        pipe = self.recipes.pipeline(transaction=False)
        for key in self.keys:
            pipe.topn.top(key, n, at=at, last=last, withcounts=True)
        return pipe

    def _queue_count(
        self, members: Sequence[Any], at: Optional[int], last: Optional[int]
    ) -> Tuple[Recipes[Any], List[List[int]]]:
        """One TOPN.COUNT per shard asked; returns the pipeline and, per
        queued command, the positions of its members in ``members``."""
        if not members:
            raise DataError("count needs at least one member")
        by_shard: Dict[int, List[int]] = {}
        for i, member in enumerate(members):
            by_shard.setdefault(self.shard_of(member), []).append(i)
        pipe = self.recipes.pipeline(transaction=False)
        for shard, positions in by_shard.items():
            pipe.topn.count(self.keys[shard], *(members[i] for i in positions), at=at, last=last)
        return pipe, list(by_shard.values())

    @staticmethod
    def _counts(replies: Sequence[List[int]], positions: List[List[int]], size: int) -> List[int]:
        out = [0] * size
        for reply, where in zip(replies, positions):
            for i, count in zip(where, reply):
                out[i] = count
        return out


class ShardedTopN(_ShardedTopN):
    """A TOPN split over ``shards`` keys ``name:{tag}`` by a hash of the member,
    on a ``redis.Redis``, a ``RedisCluster`` or a :class:`Recipes` of either.

    >>> hot = ShardedTopN(RedisCluster(...), "lookups", shards=3)
    >>> hot.incr("+15551234567")
    1
    >>> hot.top(10)
    [(b'+15551234567', 1)]
    """

    def create(
        self,
        *,
        bucket: Optional[int] = None,
        window: Optional[int] = None,
        views: Sequence[int] = (),
    ) -> None:
        """``TOPN.CREATE`` on every shard, with the same settings (a shard that
        exists otherwise is an error, raised after all were tried). ``views``
        keep ``last=k`` reads as cheap on every shard as whole-window ones."""
        self._queue_create(bucket, window, views).execute()

    def incr(self, member: Any, *, by: int = 1, at: Optional[int] = None) -> int:
        """``TOPN.INCR`` on the member's shard: its count over the window."""
        return self.recipes.topn.incr(self.key_of(member), member, by=by, at=at)

    def top(
        self, n: int = 10, *, at: Optional[int] = None, last: Optional[int] = None
    ) -> List[Tuple[Any, int]]:
        """The exact n highest ``(member, count)`` over all shards, at ``at``
        (default: this client's clock, the same for every shard)."""
        return _merge(self._queue_top(n, at, last).execute(), n)

    def count(
        self, *members: Any, at: Optional[int] = None, last: Optional[int] = None
    ) -> List[int]:
        """``TOPN.COUNT`` on each member's shard: counts in the order asked."""
        pipe, positions = self._queue_count(members, at, last)
        return self._counts(pipe.execute(), positions, len(members))


class AsyncShardedTopN(_ShardedTopN):
    """:class:`ShardedTopN` on ``redis.asyncio`` clients: the same calls, awaited."""

    async def create(
        self,
        *,
        bucket: Optional[int] = None,
        window: Optional[int] = None,
        views: Sequence[int] = (),
    ) -> None:
        await self._queue_create(bucket, window, views).execute()

    async def incr(self, member: Any, *, by: int = 1, at: Optional[int] = None) -> int:
        reply = self.recipes.topn.incr(self.key_of(member), member, by=by, at=at)
        return await cast(Awaitable[int], reply)  # typed as the sync reply

    async def top(
        self, n: int = 10, *, at: Optional[int] = None, last: Optional[int] = None
    ) -> List[Tuple[Any, int]]:
        return _merge(await self._queue_top(n, at, last).execute(), n)

    async def count(
        self, *members: Any, at: Optional[int] = None, last: Optional[int] = None
    ) -> List[int]:
        pipe, positions = self._queue_count(members, at, last)
        return self._counts(await pipe.execute(), positions, len(members))
