"""Bytes in, bytes out: members, items, values and names that are not UTF-8
come back exactly as stored, in every family, under RESP2 and RESP3 (the
``rec`` fixture) and on an asyncio client. A name that is not UTF-8 is a str
that stands for its bytes (``surrogateescape``), given as bytes or as that str."""

import asyncio

import redis.asyncio

from servers import aclose
from redis_recipes import Recipes

BINARY = b"\xff\x00\xfe"
OTHER = b"\x80:\x00"
#: names of declarations, as bytes and as the str keys of rows
NAME, GROUP = b"\xfen", b"g\xff"
NAME_STR, GROUP_STR = NAME.decode("utf-8", "surrogateescape"), GROUP.decode("utf-8", "surrogateescape")
T0 = 1_700_000_000_000


def test_rv_tl_topn_members_stay_bytes(rec):
    assert rec.rv.add("viewed", BINARY, at=T0) == 1
    assert rec.rv.add("viewed", OTHER, at=T0 + 1) == 2
    assert rec.rv.get("viewed") == [OTHER, BINARY]
    assert rec.rv.get("viewed", withscores=True) == [(OTHER, T0 + 1), (BINARY, T0)]
    assert rec.rv.rem("viewed", BINARY) == 1
    assert rec.tl.push("timeline", BINARY) == 1
    assert rec.tl.push("timeline", OTHER) == 2
    assert rec.tl.range("timeline") == [OTHER, BINARY]
    assert rec.tl.rem("timeline", BINARY) == 1
    assert rec.topn.incr("top", BINARY, by=3) == 3
    assert rec.topn.incr_many("top", [(OTHER, 1)]) == [1]
    assert rec.topn.top("top") == [BINARY, OTHER]
    assert rec.topn.top("top", withcounts=True) == [(BINARY, 3), (OTHER, 1)]
    assert rec.topn.top24("top", 1, withcounts=True) == [(BINARY, 3)]
    assert rec.topn.count("top", BINARY, OTHER) == [3, 1]
    assert rec.topn.top_with_errors("top", 1) == [(BINARY, 3, 0)]


def test_ulist_values_and_names_stay_bytes(rec, r):
    assert rec.ulist.create("l", value=[NAME, "v"], partition=GROUP)
    assert rec.ulist.add("l", **{NAME_STR: BINARY, "v": OTHER, GROUP_STR: BINARY}) is True
    assert rec.ulist.add("l", **{NAME_STR: BINARY, "v": OTHER, GROUP_STR: OTHER}) is False
    assert rec.ulist.has("l", **{NAME_STR: BINARY, "v": OTHER}) is True
    assert rec.ulist.data("l") == [{NAME_STR: BINARY, "v": OTHER, GROUP_STR: BINARY}]
    assert rec.ulist.partitions("l") == [{GROUP_STR: BINARY}]
    assert list(rec.ulist.iter_data("l", count=1)) == rec.ulist.data("l")
    # the server holds the name's own bytes
    info = r.execute_command("ULIST.INFO", "l")
    declaration = info[b"declaration"] if isinstance(info, dict) else info[info.index(b"declaration") + 1]
    assert declaration == [b"VALUE", NAME, b"v", b"PARTITION", GROUP]
    assert rec.ulist.delete("l", **{GROUP_STR: BINARY}) == 1


def test_hcounter_values_and_names_stay_bytes(rec, r):
    assert rec.hcounter.create("c", partition=NAME_STR, group=[GROUP, NAME])
    assert rec.hcounter.incr("c", **{NAME_STR: BINARY, GROUP_STR: OTHER}) == 1
    assert rec.hcounter.incrby("c", 4, **{NAME_STR: BINARY, GROUP_STR: OTHER}) == 5
    assert rec.hcounter.get("c", **{NAME_STR: BINARY, GROUP_STR: OTHER}) == 5
    assert rec.hcounter.data("c") == [{NAME_STR: BINARY, GROUP_STR: OTHER, "value": 5}]
    assert rec.hcounter.partitions("c") == [{NAME_STR: BINARY}]
    assert list(rec.hcounter.iter_data("c")) == rec.hcounter.data("c")
    info = r.execute_command("HCOUNTER.INFO", "c")
    declaration = info[b"declaration"] if isinstance(info, dict) else info[info.index(b"declaration") + 1]
    assert declaration == [b"PARTITION", NAME, b"GROUP", GROUP, NAME]
    assert rec.hcounter.delete("c", **{NAME_STR: BINARY}) == 1


def test_asyncio_keeps_bytes(server, protocol):
    async def main():
        client = redis.asyncio.Redis(port=server.port, protocol=protocol)
        await client.flushall()
        arec = Recipes(client)
        assert await arec.topn.incr("top", BINARY) == 1
        assert await arec.topn.top("top", withcounts=True) == [(BINARY, 1)]
        assert await arec.hcounter.create("c", group=NAME)
        assert await arec.hcounter.incr("c", **{NAME_STR: BINARY}) == 1
        assert [row async for row in arec.hcounter.iter_data("c")] == [{NAME_STR: BINARY, "value": 1}]
        await aclose(client)

    asyncio.run(main())
