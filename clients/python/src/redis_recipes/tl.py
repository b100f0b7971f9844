"""TL: timelines, a capped plain list per key, newest first."""

from __future__ import annotations

from typing import Any, List, Optional

from ._family import Family, exclusive, integer, option

PUSH = "TL.PUSH"
RANGE = "TL.RANGE"
REM = "TL.REM"
LEN = "TL.LEN"


class TL(Family):
    COMMANDS = (PUSH, RANGE, REM, LEN)

    def push(
        self,
        key: Any,
        item: Any,
        *,
        maxlen: Optional[int] = None,
        slack: Optional[int] = None,
        ttl: Optional[int] = None,
        pxat: Optional[int] = None,
    ) -> int:
        """``TL.PUSH``: the length after the push and any trim."""
        exclusive(ttl=ttl, pxat=pxat)
        args: List[Any] = [PUSH, key, item]
        option(args, "MAXLEN", maxlen)
        option(args, "SLACK", slack)
        option(args, "TTL", ttl)
        option(args, "PXAT", pxat)
        return self._send(integer, *args)

    def range(
        self, key: Any, *, offset: Optional[int] = None, count: Optional[int] = None
    ) -> List[Any]:
        """``TL.RANGE``: items newest first (server defaults: offset 0, count 10)."""
        args: List[Any] = [RANGE, key]
        option(args, "OFFSET", offset)
        option(args, "COUNT", count)
        return self._send(list, *args)

    def rem(self, key: Any, item: Any, *, count: Optional[int] = None) -> int:
        """``TL.REM``: occurrences removed, newest first (count 0 = all)."""
        args: List[Any] = [REM, key, item]
        option(args, "COUNT", count)
        return self._send(integer, *args)

    def len(self, key: Any) -> int:
        """``TL.LEN``: items in the list."""
        return self._send(integer, LEN, key)
