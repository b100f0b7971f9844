"""ULIST: every method, under RESP2 and RESP3 (the ``rec`` fixture)."""

import time

import pytest
import redis


def make_company_users(rec):
    rec.ulist.create(
        "company_users", value=["company_id", "user_id"], scope="month", partition="date"
    )


def test_add_has_data_partitions_delete(rec):
    make_company_users(rec)
    add = rec.ulist.add
    assert add("company_users", company_id=1, user_id=11, month="2013-08", date="2013-08-10")
    assert not add("company_users", company_id=1, user_id=11, month="2013-08", date="2013-08-11")
    assert add("company_users", company_id=2, user_id=22, month="2013-08", date="2013-08-11")
    assert rec.ulist.partitions("company_users", month="2013-08") == [
        {"month": b"2013-08", "date": b"2013-08-10"},
        {"month": b"2013-08", "date": b"2013-08-11"},
    ]
    assert rec.ulist.data("company_users", date="2013-08-11") == [
        {"company_id": b"2", "user_id": b"22", "month": b"2013-08", "date": b"2013-08-11"}
    ]
    assert len(rec.ulist.data("company_users")) == 2
    assert rec.ulist.has("company_users", company_id=1, user_id=11, month="2013-08") is True
    assert rec.ulist.has("company_users", company_id=1, user_id=11, month="2013-09") is False
    assert rec.ulist.delete("company_users", date="2013-08-10") == 1
    assert rec.ulist.has("company_users", company_id=1, user_id=11, month="2013-08") is False
    assert rec.ulist.delete("company_users") == 1
    assert rec.ulist.data("company_users") == []


def test_expiry_options(rec):
    rec.ulist.create("sessions", value="session_id", expire=600)
    now = int(time.time() * 1000)
    assert rec.ulist.add("sessions", session_id=1, at=now - 601_000)  # already gone
    assert rec.ulist.add("sessions", session_id=2)
    assert rec.ulist.add("sessions", session_id=3, never=True, at=now - 601_000)
    assert rec.ulist.add("sessions", session_id=4, expire=1, at=now - 2000)
    assert rec.ulist.add("sessions", session_id=5, pxat=now + 60_000)
    assert [row["session_id"] for row in rec.ulist.data("sessions")] == [b"2", b"3", b"5"]
    assert rec.ulist.has("sessions", session_id=1) is False


def test_binary_values_stay_whole(rec):
    rec.ulist.create("l", value="v", partition="p")
    rec.ulist.add("l", v=b"a:b\x00c", p="x:y")
    assert rec.ulist.data("l") == [{"v": b"a:b\x00c", "p": b"x:y"}]


def test_client_side_errors_raise_before_sending(rec, r):
    make_company_users(rec)
    pipe = rec.pipeline()
    bad_calls = [
        lambda: pipe.ulist.add("company_users", expire=5, never=True, company_id=1),
        lambda: pipe.ulist.add("company_users", expire=0, pxat=1, company_id=1),
        lambda: pipe.ulist.add("company_users", company_id=1, user_id=1, month="m"),  # no date
        lambda: pipe.ulist.add(
            "company_users", company_id=1, user_id=1, month="m", date="d", city=1
        ),
        lambda: pipe.ulist.has("company_users", company_id=1, user_id=1),  # no month
        lambda: pipe.ulist.has("company_users", company_id=1, user_id=1, month="m", date="d"),
        lambda: pipe.ulist.data("company_users", user_id=1),  # a value name is no filter
        lambda: pipe.ulist.delete("company_users", nope=1),
        lambda: pipe.ulist.add("anything", Value=1),  # a keyword
        lambda: pipe.ulist.add("anything", v=None),
        lambda: pipe.ulist.create("x", value=[]),
        lambda: pipe.ulist.create("x", value="v", scope="AT"),
    ]
    for call in bad_calls:
        with pytest.raises(ValueError):
            call()
    assert len(pipe.client) == 0  # nothing was queued, so nothing is sent
    assert pipe.execute() == []


def test_declare_gives_the_client_a_schema_it_did_not_create(rec, r):
    r.execute_command("ULIST.CREATE", "l", "VALUE", "v", "PARTITION", "p")
    with pytest.raises(redis.ResponseError):  # unknown to the client: the server says no
        rec.ulist.add("l", v=1, w=2)
    rec.ulist.declare("l", value="v", partition="p")
    with pytest.raises(ValueError, match="unknown name"):
        rec.ulist.add("l", v=1, w=2)
    assert rec.ulist.add("l", v=1, p=2) is True


def test_server_errors_unchanged(rec):
    with pytest.raises(redis.ResponseError, match="no such list"):
        rec.ulist.add("missing", v=1)
    rec.ulist.create("l", value="v")
    assert rec.ulist.create("l", value="v")  # the same declaration again: fine
    with pytest.raises(redis.ResponseError, match="exists"):
        rec.ulist.create("l", value="w")


def test_writers_survive_a_lost_key(rec, r):
    """A key this client created comes back when it is lost: the write that
    finds it gone creates it again from its declaration and tries once more."""
    rec.ulist.create("sess", value="sid", expire=600)
    rec.hcounter.create("views", partition="day", ttl=3600)
    assert rec.ulist.add("sess", sid="a") is True
    assert rec.hcounter.incr("views", day="d1") == 1
    r.delete("sess", "views")
    assert rec.ulist.add("sess", sid="a") is True
    assert rec.hcounter.incr("views", day="d1") == 1
    r.flushdb()
    assert rec.hcounter.incrby("views", 5, day="d1") == 5
    # Evicted: the same.
    try:
        r.config_set("maxmemory-policy", "allkeys-random")
        r.config_set("maxmemory", 1)
        with pytest.raises(redis.exceptions.OutOfMemoryError):
            r.set("trigger", "x")
    finally:
        r.config_set("maxmemory", 0)
        r.config_set("maxmemory-policy", "noeviction")
    assert r.exists("sess", "views") == 0
    assert rec.ulist.add("sess", sid="b") is True
    assert rec.hcounter.incr("views", day="d2") == 1
    # A key never declared through this client still answers the error.
    with pytest.raises(redis.ResponseError, match="no such list"):
        rec.ulist.add("other", sid="a")


def test_refresh_slides_the_expiry(rec):
    rec.ulist.create("slide", value="sid")
    now = int(time.time() * 1000)
    assert rec.ulist.add("slide", expire=10, at=now - 9_000, sid="a") is True
    assert rec.ulist.add("slide", expire=600, refresh=True, at=now - 8_000, sid="a") is False
    assert rec.ulist.add("slide", expire=1, refresh=True, at=now - 8_000, sid="a") is False
    assert rec.ulist.has("slide", sid="a") is False


def same_rows(paged, whole):
    """Whether two reads hold the same rows, each once."""
    key = lambda row: sorted(row.items())
    paged = list(paged)
    return len(paged) == len(whole) and sorted(paged, key=key) == sorted(whole, key=key)


def test_iter_reads_in_pages(rec):
    rec.ulist.create("big", value="v", scope="s")
    for i in range(57):
        rec.ulist.add("big", v=i, s=i % 3)
    # Paged rows come in an order of the key's own: compared as sets.
    assert same_rows(rec.ulist.iter_data("big", count=5), rec.ulist.data("big"))
    assert list(rec.ulist.iter_partitions("big", count=2)) == rec.ulist.partitions("big")
    assert same_rows(rec.ulist.iter_data("big", s=1), rec.ulist.data("big", s=1))
    rec.hcounter.create("hits", partition="day", group="city")
    for i in range(23):
        rec.hcounter.incr("hits", day=i % 4, city=i)
    assert same_rows(rec.hcounter.iter_data("hits", count=3), rec.hcounter.data("hits"))
    assert list(rec.hcounter.iter_partitions("hits", count=3)) == rec.hcounter.partitions("hits")
