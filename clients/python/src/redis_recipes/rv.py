"""RV: recency lists ("recently viewed"), a plain sorted set per key."""

from __future__ import annotations

from typing import Any, List, Literal, Optional, Tuple, Union, overload

from ._family import Family, exclusive, integer, members_with, option

ADD = "RV.ADD"
GET = "RV.GET"
REM = "RV.REM"
LEN = "RV.LEN"


def _ms(score: Any) -> int:
    # times are whole ms, sent as doubles (RESP3) or their text (RESP2)
    return int(float(score))


_with_times = members_with(_ms)


class RV(Family):
    COMMANDS = (ADD, GET, REM, LEN)

    def add(
        self,
        key: Any,
        member: Any,
        *,
        at: Optional[int] = None,
        maxlen: Optional[int] = None,
        ttl: Optional[int] = None,
        pxat: Optional[int] = None,
    ) -> int:
        """``RV.ADD``: entries in the list after the add and trim."""
        exclusive(ttl=ttl, pxat=pxat)
        args: List[Any] = [ADD, key, member]
        option(args, "AT", at)
        option(args, "MAXLEN", maxlen)
        option(args, "TTL", ttl)
        option(args, "PXAT", pxat)
        return self._send(integer, *args)

    @overload
    def get(
        self,
        key: Any,
        *,
        limit: Optional[int] = ...,
        since: Optional[int] = ...,
        withscores: Literal[False] = ...,
    ) -> List[Any]: ...

    @overload
    def get(
        self,
        key: Any,
        *,
        limit: Optional[int] = ...,
        since: Optional[int] = ...,
        withscores: Literal[True],
    ) -> List[Tuple[Any, int]]: ...

    def get(
        self,
        key: Any,
        *,
        limit: Optional[int] = None,
        since: Optional[int] = None,
        withscores: bool = False,
    ) -> Union[List[Any], List[Tuple[Any, int]]]:
        """``RV.GET``: members newest first; with ``withscores`` as
        ``(member, time_ms)`` pairs."""
        args: List[Any] = [GET, key]
        option(args, "LIMIT", limit)
        option(args, "SINCE", since)
        if withscores:
            args.append("WITHSCORES")
        return self._send(_with_times if withscores else list, *args)

    def rem(self, key: Any, *members: Any) -> int:
        """``RV.REM``: how many of the members were removed."""
        if not members:
            raise ValueError("RV.REM needs at least one member")
        return self._send(integer, REM, key, *members)

    def len(self, key: Any) -> int:
        """``RV.LEN``: entries in the list."""
        return self._send(integer, LEN, key)
