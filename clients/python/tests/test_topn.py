"""TOPN: every method, under RESP2 and RESP3 (the ``rec`` fixture)."""

import time

import pytest
import redis

from redis_recipes import TopNInfo

HOUR = 3_600_000
# a bucket boundary a few hours ago: inside the window at the server's time
T0 = (int(time.time() * 1000) // HOUR - 3) * HOUR


def test_create_incr_top_count(rec):
    assert rec.topn.create("lookups", bucket=3600, window=24) is True
    assert rec.topn.incr("lookups", "+1555", at=T0) == 1
    assert rec.topn.incr("lookups", "+1666", by=5, at=T0) == 5
    assert rec.topn.incr("lookups", "+1777", by=5, at=T0 + HOUR) == 5
    at = T0 + HOUR
    assert rec.topn.top("lookups", at=at) == [b"+1666", b"+1777", b"+1555"]
    assert rec.topn.top("lookups", 2, at=at, withcounts=True) == [(b"+1666", 5), (b"+1777", 5)]
    assert rec.topn.top("lookups", at=at, last=1, withcounts=True) == [(b"+1777", 5)]
    assert rec.topn.top24("lookups", 1, at=at, withcounts=True) == [(b"+1666", 5)]
    assert rec.topn.top24("lookups", at=at) == [b"+1666", b"+1777", b"+1555"]
    assert rec.topn.count("lookups", "+1555", "+1777", "none", at=at) == [1, 5, 0]
    assert rec.topn.count("lookups", "+1555", "+1777", at=at, last=1) == [0, 5]


def test_incr_many_counts_pairs_at_one_time(rec):
    assert rec.topn.create("lookups", bucket=3600, window=24)
    assert rec.topn.incr_many("lookups", {"+1555": 2, "+1666": 1}, at=T0) == [2, 1]
    # pairs, a member twice: its final count in both places
    got = rec.topn.incr_many("lookups", [("+1555", 1), ("+1777", 4), ("+1555", 2)], at=T0)
    assert got == [5, 4, 5]
    assert rec.topn.count("lookups", "+1555", "+1666", at=T0) == [5, 1]
    # at the server's time, creating the key
    assert rec.topn.incr_many("fresh", [("a", 3)]) == [3]
    # all or nothing
    with pytest.raises(redis.ResponseError, match="argument 6"):
        rec.topn.incr_many("lookups", [("+1888", 1), ("+1555", 2**63 - 1)], at=T0)
    assert rec.topn.count("lookups", "+1888", at=T0) == [0]
    with pytest.raises(ValueError, match="at least one member"):
        rec.topn.incr_many("lookups", {})


def test_info_is_a_dataclass(rec):
    rec.topn.create("t", bucket=60, window=10)
    rec.topn.incr("t", "a")
    info = rec.topn.info("t")
    assert isinstance(info, TopNInfo)
    assert (info.bucket, info.window, info.members, info.buckets) == (60, 10, 1, 1)
    assert info.memory > 0


def test_count_refuses_members_the_server_would_read_as_options(rec):
    with pytest.raises(ValueError, match="as an option"):
        rec.topn.count("t", "x", "AT", "5")
    with pytest.raises(ValueError, match="as an option"):
        rec.topn.count("t", "x", "last", "2", at=T0)
    with pytest.raises(ValueError, match="at least one member"):
        rec.topn.count("t")
    # the same names elsewhere are members
    assert rec.topn.count("t", "AT", "5", "x") == [0, 0, 0]
    assert rec.topn.count("t", "AT", "5") == [0, 0]


def test_server_errors_unchanged(rec):
    rec.topn.create("t")
    assert rec.topn.create("t")  # the same declaration again: fine
    with pytest.raises(redis.ResponseError, match="exists"):
        rec.topn.create("t", bucket=60)
    with pytest.raises(redis.ResponseError, match="LAST"):
        rec.topn.top("t", last=99)
    with pytest.raises(redis.ResponseError, match="no such key"):
        rec.topn.info("missing")


def test_align_shifts_the_buckets(rec):
    # Days from 22:00 UTC (a midnight at UTC+2).
    assert rec.topn.create("daily", bucket=86400, window=7, align=79200)
    assert rec.topn.create("daily", bucket=86400, window=7, align=79200)
    day, shift = 86400 * 1000, 79_200_000
    now = int(time.time() * 1000)
    base = (now - shift) // day * day + shift  # the last shifted boundary
    rec.topn.incr("daily", "before", at=base - 1)
    rec.topn.incr("daily", "after", at=base)
    assert rec.topn.top("daily", 10, at=base, last=1) == [b"after"]


def test_capacity_gives_counts_with_errors(rec):
    assert rec.topn.create("capped", bucket=3600, capacity=2)
    for member, by in (("a", 5), ("b", 3), ("c", 1)):
        rec.topn.incr("capped", member, by=by)
    assert rec.topn.top_with_errors("capped") == [(b"a", 5, 0), (b"c", 4, 3)]
    assert rec.topn.info("capped").members == 2
    rec.topn.create("exact")
    rec.topn.incr("exact", "x")
    assert rec.topn.top_with_errors("exact", 1) == [(b"x", 1, 0)]
    assert rec.topn.count_with_errors("capped", "b", "c") == [(4, 4), (4, 3)]
    assert rec.topn.count_with_errors("exact", "x") == [(1, 0)]
    with pytest.raises(ValueError):
        rec.topn.count("exact", "x", "WITHERRORS")
