"""TL: timelines, a capped plain list per key, newest first."""

from __future__ import annotations

from typing import Any, Awaitable, List, Optional, overload

from ._family import Async, Family, IsAsync, Sync, exclusive, integer, option

PUSH = "TL.PUSH"
RANGE = "TL.RANGE"
REM = "TL.REM"
LEN = "TL.LEN"


class TL(Family[IsAsync]):
    COMMANDS = (PUSH, RANGE, REM, LEN)

    @overload
    def push(
        self: TL[Sync], key: Any, item: Any, *, maxlen: Optional[int] = ...,
        slack: Optional[int] = ..., ttl: Optional[int] = ..., pxat: Optional[int] = ...,
    ) -> int: ...
    @overload
    def push(
        self: TL[Async], key: Any, item: Any, *, maxlen: Optional[int] = ...,
        slack: Optional[int] = ..., ttl: Optional[int] = ..., pxat: Optional[int] = ...,
    ) -> Awaitable[int]: ...
    def push(
        self,
        key: Any,
        item: Any,
        *,
        maxlen: Optional[int] = None,
        slack: Optional[int] = None,
        ttl: Optional[int] = None,
        pxat: Optional[int] = None,
    ) -> Any:
        """``TL.PUSH``: the length after the push and any trim."""
        exclusive(ttl=ttl, pxat=pxat)
        args: List[Any] = [PUSH, key, item]
        option(args, "MAXLEN", maxlen)
        option(args, "SLACK", slack)
        option(args, "TTL", ttl)
        option(args, "PXAT", pxat)
        return self._send(integer, *args)

    @overload
    def range(
        self: TL[Sync], key: Any, *, offset: Optional[int] = ..., count: Optional[int] = ...
    ) -> List[Any]: ...
    @overload
    def range(
        self: TL[Async], key: Any, *, offset: Optional[int] = ..., count: Optional[int] = ...
    ) -> Awaitable[List[Any]]: ...
    def range(self, key: Any, *, offset: Optional[int] = None, count: Optional[int] = None) -> Any:
        """``TL.RANGE``: items newest first (server defaults: offset 0, count 10)."""
        args: List[Any] = [RANGE, key]
        option(args, "OFFSET", offset)
        option(args, "COUNT", count)
        return self._send(list, *args)

    @overload
    def rem(self: TL[Sync], key: Any, item: Any, *, count: Optional[int] = ...) -> int: ...
    @overload
    def rem(
        self: TL[Async], key: Any, item: Any, *, count: Optional[int] = ...
    ) -> Awaitable[int]: ...
    def rem(self, key: Any, item: Any, *, count: Optional[int] = None) -> Any:
        """``TL.REM``: occurrences removed, newest first (count 0 = all)."""
        args: List[Any] = [REM, key, item]
        option(args, "COUNT", count)
        return self._send(integer, *args)

    @overload
    def len(self: TL[Sync], key: Any) -> int: ...
    @overload
    def len(self: TL[Async], key: Any) -> Awaitable[int]: ...
    def len(self, key: Any) -> Any:
        """``TL.LEN``: items in the list."""
        return self._send(integer, LEN, key)
