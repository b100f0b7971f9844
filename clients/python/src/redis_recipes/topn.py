"""TOPN: exact top-N over a sliding window of time buckets, one key per top-N."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import (
    Any,
    Awaitable,
    Dict,
    Iterable,
    List,
    Literal,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Union,
    overload,
)

from ._family import (
    Async,
    DataError,
    Family,
    IsAsync,
    Sync,
    integer,
    integers,
    members_with,
    ok,
    option,
    pairs,
    text,
)

CREATE = "TOPN.CREATE"
INCR = "TOPN.INCR"
INCRBY = "TOPN.INCRBY"
TOP = "TOPN.TOP"
TOP24 = "TOPN.TOP24"
COUNT = "TOPN.COUNT"
INFO = "TOPN.INFO"


@dataclass(frozen=True)
class TopNInfo:
    """``TOPN.INFO``: the key's settings and size. A field the key has no
    such thing for is None (``views``: empty)."""

    bucket: int  #: bucket width in seconds
    window: int  #: buckets in the window
    align: int  #: seconds the bucket boundaries sit after the epoch's
    members: int  #: distinct members the key's stored buckets hold
    buckets: int  #: buckets of the window that hold entries
    memory: int  #: an estimate of the value's heap bytes
    #: the key's VIEWS (buckets each), ascending
    views: List[int] = field(default_factory=list)
    #: each view's share of ``memory`` by its buckets (0 while the key is compact)
    view_memory: Dict[int, int] = field(default_factory=dict)
    capacity: Optional[int] = None  #: CAPACITY: counters a bucket keeps
    counters: Optional[int] = None  #: CAPACITY: counters held
    bound: Optional[int] = None  #: CAPACITY: the most a count of the window over-counts
    exact: Optional[bool] = None  #: CAPACITY: True while ``bound`` is 0
    #: fields this client does not know (from a newer server), as replied
    extra: Dict[str, Any] = field(default_factory=dict)


_INFO_INTEGERS = ("bucket", "window", "align", "members", "buckets", "memory")
_CAPACITY_INTEGERS = ("capacity", "counters", "bound")
_VIEW_MEMORY = re.compile(r"view-([0-9]+)-memory")


def _info(reply: Any) -> TopNInfo:
    known: Dict[str, Any] = {}
    view_memory: Dict[int, int] = {}
    extra: Dict[str, Any] = {}
    for raw_name, value in pairs(reply):
        name = text(raw_name)
        view = _VIEW_MEMORY.fullmatch(name)
        if view:
            view_memory[int(view.group(1))] = int(value)
        elif name in _INFO_INTEGERS or name in _CAPACITY_INTEGERS:
            known[name] = int(value)
        elif name == "exact":
            known[name] = bool(int(value))
        elif name != "views":  # how many: the length of ``views``
            extra[name] = value
    return TopNInfo(**known, views=sorted(view_memory), view_memory=view_memory, extra=extra)


with_counts = members_with(int)

#: TOPN.INCRBY's events: ``{member: increment}`` or ``(member, increment)`` pairs
Increments = Union[Mapping[Any, int], Iterable[Tuple[Any, int]]]


def _with_errors(reply: Any) -> List[Tuple[Any, int, int]]:
    return [(m, int(c), int(e)) for m, c, e in zip(reply[0::3], reply[1::3], reply[2::3])]


def _word(token: Any) -> str:
    return (token.decode("latin-1") if isinstance(token, bytes) else str(token)).upper()


def _options_read(tokens: List[Any]) -> int:
    """How many trailing AT/LAST pairs TOPN.COUNT reads as options (its own
    rule: final pairs, either order, once each, a member left over)."""
    seen = set()
    n = len(tokens)
    while n >= 3:
        word = tokens[n - 2]
        word = (word.decode("latin-1") if isinstance(word, bytes) else str(word)).upper()
        if word not in ("AT", "LAST") or word in seen:
            break
        seen.add(word)
        n -= 2
    return len(seen)


class TopN(Family[IsAsync]):
    COMMANDS = (CREATE, INCR, INCRBY, TOP, TOP24, COUNT, INFO)

    @overload
    def create(
        self: TopN[Sync], key: Any, *, bucket: Optional[int] = ..., window: Optional[int] = ...,
        align: Optional[int] = ..., capacity: Optional[int] = ...,
        views: Optional[Sequence[int]] = ...,
    ) -> bool: ...
    @overload
    def create(
        self: TopN[Async], key: Any, *, bucket: Optional[int] = ..., window: Optional[int] = ...,
        align: Optional[int] = ..., capacity: Optional[int] = ...,
        views: Optional[Sequence[int]] = ...,
    ) -> Awaitable[bool]: ...
    def create(
        self,
        key: Any,
        *,
        bucket: Optional[int] = None,
        window: Optional[int] = None,
        align: Optional[int] = None,
        capacity: Optional[int] = None,
        views: Optional[Sequence[int]] = None,
    ) -> Any:
        """``TOPN.CREATE``: ``bucket`` seconds per bucket, ``window`` buckets,
        boundaries ``align`` seconds after the epoch's (a day starting at a
        local midnight); ``capacity`` bounds each bucket to that many counters
        (counts then come with errors: ``top_with_errors``); ``views`` lists
        the ``last`` values the key keeps running totals for (``[6, 12]``:
        reads of the 6 and the 12 newest buckets cost what a whole-window read
        does). The same shape again is fine (views in any order); another is
        an error."""
        args: List[Any] = [CREATE, key]
        option(args, "BUCKET", bucket)
        option(args, "WINDOW", window)
        option(args, "ALIGN", align)
        option(args, "CAPACITY", capacity)
        if views:
            args.extend(("VIEWS", *views))
        return self._send(ok, *args)

    @overload
    def top_with_errors(
        self: TopN[Sync], key: Any, n: int = ..., *, at: Optional[int] = ...,
        last: Optional[int] = ...,
    ) -> List[Tuple[Any, int, int]]: ...
    @overload
    def top_with_errors(
        self: TopN[Async], key: Any, n: int = ..., *, at: Optional[int] = ...,
        last: Optional[int] = ...,
    ) -> Awaitable[List[Tuple[Any, int, int]]]: ...
    def top_with_errors(
        self,
        key: Any,
        n: int = 10,
        *,
        at: Optional[int] = None,
        last: Optional[int] = None,
    ) -> Any:
        """``TOPN.TOP ... WITHERRORS``: ``(member, count, error)``, the true
        count within ``[count - error, count]`` (error 0 on an exact key)."""
        args: List[Any] = [TOP, key, n]
        option(args, "AT", at)
        option(args, "LAST", last)
        args.append("WITHERRORS")
        return self._send(_with_errors, *args)

    @overload
    def incr(
        self: TopN[Sync], key: Any, member: Any, *, by: int = ..., at: Optional[int] = ...
    ) -> int: ...
    @overload
    def incr(
        self: TopN[Async], key: Any, member: Any, *, by: int = ..., at: Optional[int] = ...
    ) -> Awaitable[int]: ...
    def incr(self, key: Any, member: Any, *, by: int = 1, at: Optional[int] = None) -> Any:
        """``TOPN.INCR``: the member's count over the window after the add."""
        args: List[Any] = [INCR, key, member]
        if by != 1:
            args.extend(("BY", by))
        option(args, "AT", at)
        return self._send(integer, *args)

    @overload
    def incr_many(
        self: TopN[Sync], key: Any, increments: Increments, *, at: Optional[int] = ...
    ) -> List[int]: ...
    @overload
    def incr_many(
        self: TopN[Async], key: Any, increments: Increments, *, at: Optional[int] = ...
    ) -> Awaitable[List[int]]: ...
    def incr_many(self, key: Any, increments: Increments, *, at: Optional[int] = None) -> Any:
        """``TOPN.INCRBY``: many events at one time (``at``, default the
        server's), ``{member: increment}`` or ``(member, increment)`` pairs (a
        member may come twice); all or nothing. Each member's count over the
        window after the call, in the order given."""
        pairs = list(increments.items() if isinstance(increments, Mapping) else increments)
        if not pairs:
            raise DataError("TOPN.INCRBY needs at least one member")
        args: List[Any] = [INCRBY, key]
        option(args, "AT", at)
        for member, increment in pairs:
            args.extend((increment, member))
        return self._send(integers, *args)

    @overload
    def top(
        self: TopN[Sync], key: Any, n: int = ..., *, at: Optional[int] = ...,
        last: Optional[int] = ..., withcounts: Literal[False] = ...,
    ) -> List[Any]: ...
    @overload
    def top(
        self: TopN[Sync], key: Any, n: int = ..., *, at: Optional[int] = ...,
        last: Optional[int] = ..., withcounts: Literal[True],
    ) -> List[Tuple[Any, int]]: ...
    @overload
    def top(
        self: TopN[Async], key: Any, n: int = ..., *, at: Optional[int] = ...,
        last: Optional[int] = ..., withcounts: Literal[False] = ...,
    ) -> Awaitable[List[Any]]: ...
    @overload
    def top(
        self: TopN[Async], key: Any, n: int = ..., *, at: Optional[int] = ...,
        last: Optional[int] = ..., withcounts: Literal[True],
    ) -> Awaitable[List[Tuple[Any, int]]]: ...
    def top(
        self,
        key: Any,
        n: int = 10,
        *,
        at: Optional[int] = None,
        last: Optional[int] = None,
        withcounts: bool = False,
    ) -> Any:
        """``TOPN.TOP``: the n highest over the window (its ``last`` newest
        buckets), highest first, ties by member; with ``withcounts`` as
        ``(member, count)`` pairs."""
        args: List[Any] = [TOP, key, n]
        option(args, "AT", at)
        option(args, "LAST", last)
        if withcounts:
            args.append("WITHCOUNTS")
        return self._send(with_counts if withcounts else list, *args)

    @overload
    def top24(
        self: TopN[Sync], key: Any, n: int = ..., *, at: Optional[int] = ...,
        withcounts: Literal[False] = ...,
    ) -> List[Any]: ...
    @overload
    def top24(
        self: TopN[Sync], key: Any, n: int = ..., *, at: Optional[int] = ...,
        withcounts: Literal[True],
    ) -> List[Tuple[Any, int]]: ...
    @overload
    def top24(
        self: TopN[Async], key: Any, n: int = ..., *, at: Optional[int] = ...,
        withcounts: Literal[False] = ...,
    ) -> Awaitable[List[Any]]: ...
    @overload
    def top24(
        self: TopN[Async], key: Any, n: int = ..., *, at: Optional[int] = ...,
        withcounts: Literal[True],
    ) -> Awaitable[List[Tuple[Any, int]]]: ...
    def top24(
        self, key: Any, n: int = 10, *, at: Optional[int] = None, withcounts: bool = False
    ) -> Any:
        """``TOPN.TOP24``: the same over the trailing 24 hours."""
        args: List[Any] = [TOP24, key, n]
        option(args, "AT", at)
        if withcounts:
            args.append("WITHCOUNTS")
        return self._send(with_counts if withcounts else list, *args)

    @overload
    def count(
        self: TopN[Sync], key: Any, *members: Any, at: Optional[int] = ..., last: Optional[int] = ...
    ) -> List[int]: ...
    @overload
    def count(
        self: TopN[Async], key: Any, *members: Any, at: Optional[int] = ...,
        last: Optional[int] = ...,
    ) -> Awaitable[List[int]]: ...
    def count(
        self, key: Any, *members: Any, at: Optional[int] = None, last: Optional[int] = None
    ) -> Any:
        """``TOPN.COUNT``: each member's count over the window (its ``last``
        newest buckets), in the order asked."""
        return self._send(integers, *self._count_args(key, members, at, last, False))

    @overload
    def count_with_errors(
        self: TopN[Sync], key: Any, *members: Any, at: Optional[int] = ..., last: Optional[int] = ...
    ) -> List[Tuple[int, int]]: ...
    @overload
    def count_with_errors(
        self: TopN[Async], key: Any, *members: Any, at: Optional[int] = ...,
        last: Optional[int] = ...,
    ) -> Awaitable[List[Tuple[int, int]]]: ...
    def count_with_errors(
        self, key: Any, *members: Any, at: Optional[int] = None, last: Optional[int] = None
    ) -> Any:
        """``TOPN.COUNT ... WITHERRORS``: each member's ``(count, error)``, the
        true count within ``[count - error, count]`` (error 0 on an exact key)."""
        args = self._count_args(key, members, at, last, True)
        return self._send(lambda r: [(int(c), int(e)) for c, e in r], *args)

    @staticmethod
    def _count_args(
        key: Any, members: Tuple[Any, ...], at: Optional[int], last: Optional[int], errors: bool
    ) -> List[Any]:
        if not members:
            raise DataError("TOPN.COUNT needs at least one member")
        args: List[Any] = [COUNT, key, *members]
        option(args, "AT", at)
        option(args, "LAST", last)
        options = (len(args) - 2 - len(members)) // 2
        tail = args[2:]
        flag = len(tail) >= 2 and _word(tail[-1]) == "WITHERRORS"
        if flag or _options_read(tail) != options:
            raise DataError(
                f"TOPN.COUNT would read the members {members[-2:]!r} as an option; "
                "ask for them in another order or in another call"
            )
        if errors:
            args.append("WITHERRORS")
        return args

    @overload
    def info(self: TopN[Sync], key: Any) -> TopNInfo: ...
    @overload
    def info(self: TopN[Async], key: Any) -> Awaitable[TopNInfo]: ...
    def info(self, key: Any) -> Any:
        """``TOPN.INFO``; a missing key is an error."""
        return self._send(_info, INFO, key)
