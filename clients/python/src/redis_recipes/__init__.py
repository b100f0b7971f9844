"""redis-recipes: the recipes Redis module (RV, TL, TOPN, ULIST, HCOUNTER) on
redis-py, with exact sharded top-N.

>>> import redis
>>> from redis_recipes import Recipes
>>> rec = Recipes(redis.Redis())
>>> rec.topn.incr("lookups", "+15551234567")
1
"""

from ._family import DataError
from .client import Recipes
from .sharded import AsyncShardedTopN, ShardedTopN, shard_tags
from .topn import TopNInfo

__all__ = [
    "Recipes",
    "ShardedTopN",
    "AsyncShardedTopN",
    "TopNInfo",
    "DataError",
    "shard_tags",
]
__version__ = "0.3.0"
