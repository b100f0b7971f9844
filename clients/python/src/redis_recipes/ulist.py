"""ULIST: lists of unique values with scopes, partitions and per-value expiry."""

from __future__ import annotations

from typing import (
    Any,
    AsyncIterator,
    Awaitable,
    Dict,
    Iterator,
    List,
    Optional,
    Sequence,
    Union,
    overload,
)

from ._family import (
    Async,
    DataError,
    Family,
    IsAsync,
    Schema,
    Sync,
    boolean,
    check_names,
    exclusive,
    flat_pairs,
    integer,
    name_list,
    option,
    rows,
    wire_name,
)

CREATE = "ULIST.CREATE"
ADD = "ULIST.ADD"
HAS = "ULIST.HAS"
DATA = "ULIST.DATA"
PARTITIONS = "ULIST.PARTITIONS"
DEL = "ULIST.DEL"

KEYWORDS = ("VALUE", "SCOPE", "PARTITION", "EXPIRE", "NEVER", "AT", "PXAT", "REFRESH")

Names = Union[str, bytes, Sequence[Union[str, bytes]]]
Row = Dict[str, Any]


class UList(Family[IsAsync]):
    COMMANDS = (CREATE, ADD, HAS, DATA, PARTITIONS, DEL)
    KEYWORDS = KEYWORDS

    @overload
    def create(
        self: UList[Sync], key: Any, *, value: Names, scope: Optional[Names] = ...,
        partition: Optional[Names] = ..., expire: Optional[int] = ...,
    ) -> bool: ...
    @overload
    def create(
        self: UList[Async], key: Any, *, value: Names, scope: Optional[Names] = ...,
        partition: Optional[Names] = ..., expire: Optional[int] = ...,
    ) -> Awaitable[bool]: ...
    def create(
        self,
        key: Any,
        *,
        value: Names,
        scope: Optional[Names] = None,
        partition: Optional[Names] = None,
        expire: Optional[int] = None,
    ) -> Any:
        """``ULIST.CREATE``: a value is the tuple of the ``value`` names, unique
        within its ``scope`` tuple, kept in its ``partition``; ``expire`` is the
        default lifetime of a value in seconds. A key that exists with the same
        declaration is fine (nothing changes); with another, an error. The
        client remembers the declaration: an ``add`` that finds the key gone
        (deleted, evicted, flushed) creates it again and tries once more."""
        schema = self._schema_of(value, scope, partition)
        args: List[Any] = [CREATE, key]
        for word, group in (("VALUE", "value"), ("SCOPE", "scope"), ("PARTITION", "partition")):
            if schema.groups[group]:
                args.append(word)
                args.extend(wire_name(name) for name in schema.groups[group])
        option(args, "EXPIRE", expire)
        schema.create = [CREATE, *args[2:]]
        return self._send(self._created(key, schema), *args)

    def declare(
        self,
        key: Any,
        *,
        value: Names,
        scope: Optional[Names] = None,
        partition: Optional[Names] = None,
    ) -> None:
        """Tell the client the schema of a list created elsewhere, so that it
        checks names before sending (nothing is sent)."""
        self._remember(key, self._schema_of(value, scope, partition))

    @overload
    def add(
        self: UList[Sync], key: Any, /, *, expire: Optional[int] = ..., never: bool = ...,
        pxat: Optional[int] = ..., refresh: bool = ..., at: Optional[int] = ..., **names: Any,
    ) -> bool: ...
    @overload
    def add(
        self: UList[Async], key: Any, /, *, expire: Optional[int] = ..., never: bool = ...,
        pxat: Optional[int] = ..., refresh: bool = ..., at: Optional[int] = ..., **names: Any,
    ) -> Awaitable[bool]: ...
    def add(
        self,
        key: Any,
        /,
        *,
        expire: Optional[int] = None,
        never: bool = False,
        pxat: Optional[int] = None,
        refresh: bool = False,
        at: Optional[int] = None,
        **names: Any,
    ) -> Any:
        """``ULIST.ADD``: True if the value is new within its scope. ``names``
        gives every value, scope and partition name its value; ``expire``
        (seconds), ``never`` or ``pxat`` (absolute ms) override the list's
        default expiry; ``refresh`` gives a live value this add's expiry
        (sliding expiry; the answer is still False)."""
        exclusive(expire=expire, never=never, pxat=pxat)
        self._check(ADD, key, names, required=("value", "scope", "partition"))
        args: List[Any] = [ADD, key]
        option(args, "EXPIRE", expire)
        if never:
            args.append("NEVER")
        option(args, "PXAT", pxat)
        if refresh:
            args.append("REFRESH")
        option(args, "AT", at)
        return self._write(key, boolean, *args, *flat_pairs(names))

    @overload
    def has(self: UList[Sync], key: Any, /, **names: Any) -> bool: ...
    @overload
    def has(self: UList[Async], key: Any, /, **names: Any) -> Awaitable[bool]: ...
    def has(self, key: Any, /, **names: Any) -> Any:
        """``ULIST.HAS``: whether the value (its value and scope names) is live
        in its scope."""
        self._check(HAS, key, names, required=("value", "scope"))
        return self._send(boolean, HAS, key, *flat_pairs(names))

    @overload
    def data(self: UList[Sync], key: Any, /, **where: Any) -> List[Row]: ...
    @overload
    def data(self: UList[Async], key: Any, /, **where: Any) -> Awaitable[List[Row]]: ...
    def data(self, key: Any, /, **where: Any) -> Any:
        """``ULIST.DATA``: a row per live value of the matching scopes and
        partitions (``where`` takes any scope and partition names)."""
        self._check(DATA, key, where, optional=("scope", "partition"))
        return self._send(rows, DATA, key, *flat_pairs(where))

    @overload
    def partitions(self: UList[Sync], key: Any, /, **where: Any) -> List[Row]: ...
    @overload
    def partitions(self: UList[Async], key: Any, /, **where: Any) -> Awaitable[List[Row]]: ...
    def partitions(self, key: Any, /, **where: Any) -> Any:
        """``ULIST.PARTITIONS``: a row per partition holding a live value."""
        self._check(PARTITIONS, key, where, optional=("scope", "partition"))
        return self._send(rows, PARTITIONS, key, *flat_pairs(where))

    @overload
    def iter_data(
        self: UList[Sync], key: Any, /, *, count: Optional[int] = ..., **where: Any
    ) -> Iterator[Row]: ...
    @overload
    def iter_data(
        self: UList[Async], key: Any, /, *, count: Optional[int] = ..., **where: Any
    ) -> AsyncIterator[Row]: ...
    def iter_data(self, key: Any, /, *, count: Optional[int] = None, **where: Any) -> Any:
        """The rows of ``data`` (in an order of the key's own), fetched
        ``count`` at a time (``CURSOR``); ``async for`` on an asyncio client.
        Not on a pipeline (a DataError)."""
        self._check(DATA, key, where, optional=("scope", "partition"))
        return self._pages("iter_data", rows, DATA, key, where, count)

    @overload
    def iter_partitions(
        self: UList[Sync], key: Any, /, *, count: Optional[int] = ..., **where: Any
    ) -> Iterator[Row]: ...
    @overload
    def iter_partitions(
        self: UList[Async], key: Any, /, *, count: Optional[int] = ..., **where: Any
    ) -> AsyncIterator[Row]: ...
    def iter_partitions(self, key: Any, /, *, count: Optional[int] = None, **where: Any) -> Any:
        """The rows of ``partitions``, fetched ``count`` at a time (``CURSOR``)."""
        self._check(PARTITIONS, key, where, optional=("scope", "partition"))
        return self._pages("iter_partitions", rows, PARTITIONS, key, where, count)

    @overload
    def delete(self: UList[Sync], key: Any, /, **where: Any) -> int: ...
    @overload
    def delete(self: UList[Async], key: Any, /, **where: Any) -> Awaitable[int]: ...
    def delete(self, key: Any, /, **where: Any) -> Any:
        """``ULIST.DEL``: partitions deleted (all of them without ``where``)."""
        self._check(DEL, key, where, optional=("scope", "partition"))
        return self._send(integer, DEL, key, *flat_pairs(where))

    @staticmethod
    def _schema_of(value: Names, scope: Optional[Names], partition: Optional[Names]) -> Schema:
        groups = {
            "value": name_list("value", value),
            "scope": name_list("scope", scope),
            "partition": name_list("partition", partition),
        }
        if not groups["value"]:
            raise DataError("ULIST.CREATE needs at least one value name")
        for names in groups.values():
            check_names(CREATE, KEYWORDS, dict.fromkeys(names, ""))
        return Schema(**groups)
