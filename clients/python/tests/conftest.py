"""Fixtures: one real server (and one real 3-node cluster) per test session,
started from the module .so in ``RECIPES_MODULE``; every test starts on an
empty server."""

from __future__ import annotations

from typing import Iterator

import pytest
import redis

from redis_recipes import Recipes
from servers import Cluster, Server


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    s = Server()
    yield s
    s.stop()


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    c = Cluster()
    yield c
    c.stop()


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def protocol(request: pytest.FixtureRequest) -> int:
    return request.param


@pytest.fixture
def r(server: Server, protocol: int) -> Iterator[redis.Redis]:
    client = redis.Redis(port=server.port, protocol=protocol, socket_timeout=10)
    client.flushall()
    yield client
    client.close()


@pytest.fixture
def rec(r: redis.Redis) -> Recipes:
    return Recipes(r)


@pytest.fixture
def rc(cluster: Cluster, protocol: int) -> Iterator[redis.cluster.RedisCluster]:
    client = redis.cluster.RedisCluster(
        host="127.0.0.1", port=cluster.nodes[0].port, protocol=protocol, socket_timeout=10
    )
    client.flushall(target_nodes=redis.cluster.RedisCluster.PRIMARIES)
    yield client
    client.close()
