"""``Recipes``: the module's families on a redis-py client."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Generic, Literal, Optional, Tuple, Type, Union, overload

from ._family import Family, IsAsync, Schema, apply_reply_parser
from .hcounter import HCounter
from .rv import RV
from .tl import TL
from .topn import TopN
from .ulist import UList

if TYPE_CHECKING:
    import redis
    import redis.asyncio
    import redis.asyncio.cluster
    import redis.cluster

    SyncClient = Union[redis.Redis, redis.cluster.RedisCluster, redis.cluster.ClusterPipeline]
    AsyncClient = Union[
        redis.asyncio.Redis, redis.asyncio.RedisCluster, redis.asyncio.cluster.ClusterPipeline
    ]

FAMILIES: Tuple[Type[Family[Any]], ...] = (RV, TL, TopN, UList, HCounter)

Schemas = Dict[Tuple[str, bytes], Schema]


class Recipes(Generic[IsAsync]):
    """The recipes module's commands on ``client``: a ``redis.Redis``, a
    ``redis.cluster.RedisCluster``, a pipeline of either, or their
    ``redis.asyncio`` twins (whose methods return awaitables, and are typed so).

    >>> rec = Recipes(redis.Redis())
    >>> rec.topn.incr("lookups", "+15551234567")
    1
    """

    rv: RV[IsAsync]
    tl: TL[IsAsync]
    topn: TopN[IsAsync]
    ulist: UList[IsAsync]
    hcounter: HCounter[IsAsync]

    @overload
    def __init__(
        self: Recipes[Literal[False]], client: SyncClient, *, _schemas: Optional[Schemas] = ...
    ) -> None: ...
    @overload
    def __init__(
        self: Recipes[Literal[True]], client: AsyncClient, *, _schemas: Optional[Schemas] = ...
    ) -> None: ...
    def __init__(self, client: Any, *, _schemas: Optional[Schemas] = None) -> None:
        self.client = client
        #: schemas of ULIST / HCOUNTER keys this client created or declared,
        #: shared with its pipelines
        self.schemas: Schemas = {} if _schemas is None else _schemas
        # the asyncio ClusterPipeline of redis-py 5.0 parses with its cluster
        # client's callbacks and has no setter of its own
        owner = client if hasattr(client, "set_response_callback") else client._client
        for family in FAMILIES:
            for command in family.COMMANDS:
                owner.set_response_callback(command, apply_reply_parser)
        self.rv = RV(self)
        self.tl = TL(self)
        self.topn = TopN(self)
        self.ulist = UList(self)
        self.hcounter = HCounter(self)

    def pipeline(self, *args: Any, **kwargs: Any) -> Recipes[Literal[False]]:
        """The families on ``client.pipeline(...)``: queue calls, then
        ``execute()`` returns their parsed replies in order (awaited on an
        asyncio client). A queued call returns the pipeline, whatever its
        annotation says, as redis-py's own queued commands do."""
        return Recipes(self.client.pipeline(*args, **kwargs), _schemas=self.schemas)

    def execute(self, *args: Any, **kwargs: Any) -> Any:
        """``execute()`` of the pipeline these Recipes are on."""
        return self.client.execute(*args, **kwargs)

    def __enter__(self) -> Recipes[IsAsync]:
        self.client.__enter__()
        return self

    def __exit__(self, *exc: Any) -> Any:
        return self.client.__exit__(*exc)

    async def __aenter__(self) -> Recipes[IsAsync]:
        await self.client.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self.client.__aexit__(*exc)


__all__ = ["Recipes", "Family"]
