"""RV: recency lists ("recently viewed"), a plain sorted set per key."""

from __future__ import annotations

from typing import Any, Awaitable, List, Literal, Optional, Tuple, overload

from ._family import Async, DataError, Family, IsAsync, Sync, exclusive, integer, members_with, option

ADD = "RV.ADD"
GET = "RV.GET"
REM = "RV.REM"
LEN = "RV.LEN"

def _ms(score: Any) -> int:
    # times are whole ms, sent as doubles (RESP3) or their text (RESP2)
    return int(float(score))

_with_times = members_with(_ms)

class RV(Family[IsAsync]):
    COMMANDS = (ADD, GET, REM, LEN)

    @overload
    def add(
        self: RV[Sync], key: Any, member: Any, *, at: Optional[int] = ...,
        maxlen: Optional[int] = ..., ttl: Optional[int] = ..., pxat: Optional[int] = ...,
    ) -> int: ...
    @overload
    def add(
        self: RV[Async], key: Any, member: Any, *, at: Optional[int] = ...,
        maxlen: Optional[int] = ..., ttl: Optional[int] = ..., pxat: Optional[int] = ...,
    ) -> Awaitable[int]: ...
    def add(
        self,
        key: Any,
        member: Any,
        *,
        at: Optional[int] = None,
        maxlen: Optional[int] = None,
        ttl: Optional[int] = None,
        pxat: Optional[int] = None,
    ) -> Any:
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
        self: RV[Sync], key: Any, *, limit: Optional[int] = ..., since: Optional[int] = ...,
        withscores: Literal[False] = ...,
    ) -> List[Any]: ...
    @overload
    def get(
        self: RV[Sync], key: Any, *, limit: Optional[int] = ..., since: Optional[int] = ...,
        withscores: Literal[True],
    ) -> List[Tuple[Any, int]]: ...
    @overload
    def get(
        self: RV[Async], key: Any, *, limit: Optional[int] = ..., since: Optional[int] = ...,
        withscores: Literal[False] = ...,
    ) -> Awaitable[List[Any]]: ...
    @overload
    def get(
        self: RV[Async], key: Any, *, limit: Optional[int] = ..., since: Optional[int] = ...,
        withscores: Literal[True],
    ) -> Awaitable[List[Tuple[Any, int]]]: ...
    def get(
        self,
        key: Any,
        *,
        limit: Optional[int] = None,
        since: Optional[int] = None,
        withscores: bool = False,
    ) -> Any:
        """``RV.GET``: members newest first; with ``withscores`` as
        ``(member, time_ms)`` pairs."""
        args: List[Any] = [GET, key]
        option(args, "LIMIT", limit)
        option(args, "SINCE", since)
        if withscores:
            args.append("WITHSCORES")
        return self._send(_with_times if withscores else list, *args)

    @overload
    def rem(self: RV[Sync], key: Any, *members: Any) -> int: ...
    @overload
    def rem(self: RV[Async], key: Any, *members: Any) -> Awaitable[int]: ...
    def rem(self, key: Any, *members: Any) -> Any:
        """``RV.REM``: how many of the members were removed."""
        if not members:
            raise DataError("RV.REM needs at least one member")
        return self._send(integer, REM, key, *members)

    @overload
    def len(self: RV[Sync], key: Any) -> int: ...
    @overload
    def len(self: RV[Async], key: Any) -> Awaitable[int]: ...
    def len(self, key: Any) -> Any:
        """``RV.LEN``: entries in the list."""
        return self._send(integer, LEN, key)
