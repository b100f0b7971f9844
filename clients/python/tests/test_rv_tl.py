"""RV and TL: every method, under RESP2 and RESP3 (the ``rec`` fixture)."""

import time

import pytest
import redis

T0 = 1_700_000_000_000


def test_rv_add_get_rem_len(rec):
    assert rec.rv.add("viewed", "item:7", at=T0, maxlen=3) == 1
    assert rec.rv.add("viewed", "item:9", at=T0 + 1, maxlen=3) == 2
    assert rec.rv.add("viewed", "item:7", at=T0 + 2, maxlen=3) == 2
    assert rec.rv.get("viewed") == [b"item:7", b"item:9"]
    assert rec.rv.get("viewed", limit=1) == [b"item:7"]
    assert rec.rv.get("viewed", withscores=True) == [(b"item:7", T0 + 2), (b"item:9", T0 + 1)]
    assert rec.rv.get("viewed", since=T0 + 2, withscores=True) == [(b"item:7", T0 + 2)]
    assert rec.rv.len("viewed") == 2
    assert rec.rv.rem("viewed", "item:9", "nope") == 1
    assert rec.rv.len("viewed") == 1


def test_rv_maxlen_and_expiry(rec, r):
    now = int(time.time() * 1000)
    for i in range(5):
        rec.rv.add("v", f"m{i}", at=now + i, maxlen=3, ttl=100)
    assert rec.rv.get("v") == [b"m4", b"m3", b"m2"]
    assert 0 < r.ttl("v") <= 100
    rec.rv.add("v", "m5", pxat=T0 + 10**12)
    assert r.pexpiretime("v") == T0 + 10**12


def test_tl_push_range_rem_len(rec):
    for i in range(1, 6):
        length = rec.tl.push("timeline", f"post:{i}", maxlen=3, slack=2)
    assert length == 3
    assert rec.tl.range("timeline", count=2) == [b"post:5", b"post:4"]
    assert rec.tl.range("timeline", offset=1) == [b"post:4", b"post:3"]
    assert rec.tl.push("timeline", "post:5", ttl=60) == 4
    assert rec.tl.rem("timeline", "post:5") == 1
    assert rec.tl.rem("timeline", "post:5", count=0) == 1
    assert rec.tl.len("timeline") == 2
    rec.tl.push("timeline", "post:6", pxat=T0 + 10**12)
    assert rec.tl.len("timeline") == 3


def test_rv_tl_client_side_errors(rec):
    with pytest.raises(ValueError, match="ttl and pxat"):
        rec.rv.add("v", "m", ttl=1, pxat=T0)
    with pytest.raises(ValueError, match="ttl and pxat"):
        rec.tl.push("t", "i", ttl=1, pxat=T0)
    with pytest.raises(ValueError, match="at least one member"):
        rec.rv.rem("v")


def test_rv_tl_server_errors_unchanged(rec, r):
    r.set("s", "x")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        rec.rv.add("s", "m")
    with pytest.raises(redis.ResponseError, match="MAXLEN"):
        rec.tl.push("t", "i", maxlen=-1)
