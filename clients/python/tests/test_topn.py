"""TOPN: every method, under RESP2 and RESP3 (the ``rec`` fixture)."""

import time

import pytest
import redis

from redis_recipes import TopNInfo
from redis_recipes.topn import _info

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


def test_info_whole_on_a_compact_key(rec):
    rec.topn.create("t", bucket=60, window=10)
    rec.topn.incr("t", "a")
    info = rec.topn.info("t")
    assert isinstance(info, TopNInfo)
    assert info.memory > 0
    # no views, no CAPACITY fields, nothing unknown
    whole = TopNInfo(bucket=60, window=10, align=0, members=1, buckets=1, memory=info.memory)
    assert info == whole
    assert (info.views, info.view_memory, info.capacity, info.extra) == ([], {}, None, {})
    # a compact key declares its views and keeps no totals for them yet
    rec.topn.create("small", bucket=60, window=10, views=[2])
    rec.topn.incr("small", "a")
    small = rec.topn.info("small")
    assert (small.views, small.view_memory) == ([2], {2: 0})


def test_views_key_created_read_back_and_info_whole(rec):
    assert rec.topn.create("dash", bucket=3600, window=24, align=1800, views=[12, 6])
    assert rec.topn.create("dash", bucket=3600, window=24, align=1800, views=[6, 12])  # a set
    # more (bucket, member) entries than a compact key holds: the key goes full
    events = {f"m{i:03}": i + 1 for i in range(150)}
    assert rec.topn.incr_many("dash", events, at=T0) == list(events.values())
    assert rec.topn.incr("dash", "now", by=500) == 500
    assert rec.topn.top("dash", 3, last=6, withcounts=True) == [
        (b"now", 500), (b"m149", 150), (b"m148", 149)
    ]
    assert rec.topn.top("dash", 2, last=1) == [b"now"]  # T0 is hours ago
    assert rec.topn.count("dash", "m000", "now", last=12) == [1, 500]
    info = rec.topn.info("dash")
    assert (info.bucket, info.window, info.align, info.members, info.buckets) == (
        3600, 24, 1800, 151, 2
    )
    assert info.views == [6, 12]
    assert sorted(info.view_memory) == [6, 12]
    assert all(0 < n < info.memory for n in info.view_memory.values())
    assert (info.capacity, info.counters, info.bound, info.exact, info.extra) == (
        None, None, None, None, {}
    )


def test_info_whole_on_a_capacity_key(rec):
    assert rec.topn.create("capped", bucket=3600, window=24, capacity=2)
    rec.topn.incr_many("capped", {"a": 5, "b": 3})
    info = rec.topn.info("capped")
    assert (info.capacity, info.counters, info.bound) == (2, 2, 0) and info.exact is True
    # c takes b's place: a member the bucket evicted counts its smallest, 4
    rec.topn.incr("capped", "c")
    info = rec.topn.info("capped")
    assert (info.capacity, info.counters, info.bound) == (2, 2, 4) and info.exact is False
    assert (info.members, info.views, info.view_memory, info.extra) == (2, [], {}, {})


def test_views_errors_are_response_errors(rec, r):
    with pytest.raises(redis.ResponseError, match="VIEWS does not apply to a key with CAPACITY"):
        rec.topn.create("bad", capacity=10, views=[6])
    with pytest.raises(redis.ResponseError, match="VIEWS"):
        rec.topn.create("bad", window=24, views=[24])
    with pytest.raises(redis.ResponseError, match="twice"):
        rec.topn.create("bad", views=[6, 6])
    assert rec.topn.create("v", views=[6])
    with pytest.raises(redis.ResponseError, match="another shape"):
        rec.topn.create("v", views=[6, 12])
    assert r.exists("bad") == 0


@pytest.mark.parametrize("resp3", [False, True], ids=["resp2", "resp3"])
def test_info_keeps_fields_it_does_not_know(resp3):
    fields = [
        (b"bucket", 60), (b"window", 10), (b"align", 0), (b"members", 3), (b"buckets", 1),
        (b"memory", 900), (b"views", 2), (b"view-12-memory", 40), (b"view-6-memory", 30),
        (b"future-field", 7), (b"future-words", [b"a", b"b"]),
    ]
    reply = dict(fields) if resp3 else [x for pair in fields for x in pair]
    info = _info(reply)
    assert (info.members, info.views, info.view_memory) == (3, [6, 12], {6: 30, 12: 40})
    assert info.extra == {"future-field": 7, "future-words": [b"a", b"b"]}


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
