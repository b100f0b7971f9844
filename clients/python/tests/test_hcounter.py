"""HCOUNTER: every method, under RESP2 and RESP3 (the ``rec`` fixture)."""

import time

import pytest
import redis


def test_grouped_partitioned_counter(rec):
    rec.hcounter.create(
        "pages_by_day_city", partition=["date", "company_id"], group=["company_id", "city_id"]
    )
    incr = rec.hcounter.incr
    assert incr("pages_by_day_city", date="2013-08-01", company_id=1, city_id=11) == 1
    assert (
        rec.hcounter.incrby("pages_by_day_city", 3, date="2013-08-02", company_id=1, city_id=15)
        == 3
    )
    assert rec.hcounter.get("pages_by_day_city", date="2013-08-02", company_id=1, city_id=15) == 3
    assert rec.hcounter.get("pages_by_day_city", date="2013-08-02", company_id=1, city_id=99) == 0
    assert rec.hcounter.partitions("pages_by_day_city", date="2013-08-01") == [
        {"date": b"2013-08-01", "company_id": b"1"}
    ]
    assert rec.hcounter.data("pages_by_day_city", company_id=1) == [
        {"date": b"2013-08-01", "company_id": b"1", "city_id": b"11", "value": 1},
        {"date": b"2013-08-02", "company_id": b"1", "city_id": b"15", "value": 3},
    ]
    assert rec.hcounter.delete("pages_by_day_city", date="2013-08-01") == 1
    assert len(rec.hcounter.partitions("pages_by_day_city")) == 1
    assert rec.hcounter.delete("pages_by_day_city") == 1
    assert rec.hcounter.data("pages_by_day_city") == []


def test_unique_counter(rec):
    rec.hcounter.create(
        "company_users", partition="date", group="company_id",
        unique=["company_id", "user_id"], scope="month",
    )  # fmt: skip
    incr = rec.hcounter.incr
    assert incr("company_users", date="2013-08-10", company_id=1, user_id=11, month="2013-08") == 1
    assert incr("company_users", date="2013-08-11", company_id=1, user_id=11, month="2013-08") == 0
    assert incr("company_users", date="2013-08-11", company_id=1, user_id=12, month="2013-08") == 1
    assert [row["value"] for row in rec.hcounter.data("company_users")] == [1, 1]


def test_float_counter_and_counter_without_names(rec):
    rec.hcounter.create("revenue", partition="day", ttl=604800, float_mode=True)
    now = int(time.time() * 1000)
    assert rec.hcounter.incrby("revenue", 10.5, day="2013-08-01", at=now) == 10.5
    assert rec.hcounter.incrby("revenue", 0.1, day="2013-08-01") == 10.6
    assert rec.hcounter.get("revenue", day="2013-08-01") == 10.6
    assert rec.hcounter.data("revenue") == [{"day": b"2013-08-01", "value": 10.6}]
    assert isinstance(rec.hcounter.incr("revenue", day="x"), float)
    rec.hcounter.create("hits")
    assert rec.hcounter.incr("hits") == 1
    assert rec.hcounter.data("hits") == [{"value": 1}]
    assert rec.hcounter.partitions("hits") == [{}]


def test_client_side_errors_raise_before_sending(rec):
    rec.hcounter.create("c", partition="date", group="company_id")
    pipe = rec.pipeline()
    bad_calls = [
        lambda: pipe.hcounter.incr("c", date="d"),  # no company_id
        lambda: pipe.hcounter.incr("c", date="d", company_id=1, city=2),
        lambda: pipe.hcounter.get("c", company_id=1),
        lambda: pipe.hcounter.data("c", company_id=1),  # a group name is no filter
        lambda: pipe.hcounter.delete("c", nope=1),
        lambda: pipe.hcounter.incr("other", value=1),  # rows use it for the count
        lambda: pipe.hcounter.incr("other", TTL=1),
        lambda: pipe.hcounter.create("x", scope="s"),  # scope needs unique
        lambda: pipe.hcounter.create("x", group=["ok", "Group"]),
    ]
    for call in bad_calls:
        with pytest.raises(ValueError):
            call()
    assert len(pipe.client) == 0
    assert pipe.execute() == []


def test_declare_gives_the_client_a_schema_it_did_not_create(rec, r):
    r.execute_command("HCOUNTER.CREATE", "c", "PARTITION", "day", "GROUP", "city")
    rec.hcounter.declare("c", partition="day", group="city")
    with pytest.raises(ValueError, match="missing name"):
        rec.hcounter.incr("c", day="d1")
    assert rec.hcounter.incr("c", day="d1", city="x") == 1


def test_server_errors_unchanged(rec):
    with pytest.raises(redis.ResponseError, match="no such counter"):
        rec.hcounter.incr("missing", a=1)
    rec.hcounter.create("c", group="g")
    with pytest.raises(redis.ResponseError, match="exists"):
        rec.hcounter.create("c")
    with pytest.raises(redis.ResponseError):
        rec.hcounter.incrby("c", "not-a-number", g=1)
