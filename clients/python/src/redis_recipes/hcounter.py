"""HCOUNTER: partitioned, grouped counters, with unique-event counting."""

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
    check_names,
    flat_pairs,
    integer,
    name_list,
    number,
    option,
    row,
    rows,
    wire_name,
)

CREATE = "HCOUNTER.CREATE"
INCR = "HCOUNTER.INCR"
INCRBY = "HCOUNTER.INCRBY"
GET = "HCOUNTER.GET"
DATA = "HCOUNTER.DATA"
PARTITIONS = "HCOUNTER.PARTITIONS"
DEL = "HCOUNTER.DEL"

#: ``value`` is where a row carries its count
KEYWORDS = ("PARTITION", "GROUP", "UNIQUE", "SCOPE", "TTL", "FLOAT", "AT", "value")

Names = Union[str, bytes, Sequence[Union[str, bytes]]]
Count = Union[int, float]
Row = Dict[str, Any]

#: the names an INCR gives (a unique counter's UNIQUE and SCOPE names too)
_WRITE = ("partition", "group", "unique", "scope")


def _data_row(reply: Any) -> Row:
    out = row(reply)
    out["value"] = number(out["value"])
    return out


def _data_rows(reply: Any) -> List[Row]:
    return [_data_row(r) for r in reply]


class HCounter(Family[IsAsync]):
    COMMANDS = (CREATE, INCR, INCRBY, GET, DATA, PARTITIONS, DEL)
    KEYWORDS = KEYWORDS

    @overload
    def create(
        self: HCounter[Sync], key: Any, *, partition: Optional[Names] = ...,
        group: Optional[Names] = ..., ttl: Optional[int] = ..., float_mode: bool = ...,
        unique: Optional[Names] = ..., scope: Optional[Names] = ...,
    ) -> bool: ...
    @overload
    def create(
        self: HCounter[Async], key: Any, *, partition: Optional[Names] = ...,
        group: Optional[Names] = ..., ttl: Optional[int] = ..., float_mode: bool = ...,
        unique: Optional[Names] = ..., scope: Optional[Names] = ...,
    ) -> Awaitable[bool]: ...
    def create(
        self,
        key: Any,
        *,
        partition: Optional[Names] = None,
        group: Optional[Names] = None,
        ttl: Optional[int] = None,
        float_mode: bool = False,
        unique: Optional[Names] = None,
        scope: Optional[Names] = None,
    ) -> Any:
        """``HCOUNTER.CREATE``: each ``partition`` tuple is a partition, each
        ``group`` tuple a cell in it; ``ttl`` seconds per partition after its
        latest write; ``float_mode`` counts doubles; ``unique`` (within
        ``scope``) counts a tuple once. A key that exists is an error."""
        schema = self._schema_of(partition, group, unique, scope)
        args: List[Any] = [CREATE, key]
        for word in ("PARTITION", "GROUP"):
            names = schema.groups[word.lower()]
            if names:
                args.extend((word, *map(wire_name, names)))
        option(args, "TTL", ttl)
        if float_mode:
            args.append("FLOAT")
        for word in ("UNIQUE", "SCOPE"):
            names = schema.groups[word.lower()]
            if names:
                args.extend((word, *map(wire_name, names)))
        schema.create = [CREATE, *args[2:]]
        return self._send(self._created(key, schema), *args)

    def declare(
        self,
        key: Any,
        *,
        partition: Optional[Names] = None,
        group: Optional[Names] = None,
        unique: Optional[Names] = None,
        scope: Optional[Names] = None,
    ) -> None:
        """Tell the client the schema of a counter created elsewhere, so that
        it checks names before sending (nothing is sent)."""
        self._remember(key, self._schema_of(partition, group, unique, scope))

    @overload
    def incr(self: HCounter[Sync], key: Any, /, *, at: Optional[int] = ..., **names: Any) -> Count: ...
    @overload
    def incr(
        self: HCounter[Async], key: Any, /, *, at: Optional[int] = ..., **names: Any
    ) -> Awaitable[Count]: ...
    def incr(self, key: Any, /, *, at: Optional[int] = None, **names: Any) -> Any:
        """``HCOUNTER.INCR``: the cell's count after the call (a float on a
        FLOAT counter)."""
        self._check(INCR, key, names, required=_WRITE)
        args: List[Any] = [INCR, key]
        option(args, "AT", at)
        return self._write(key, number, *args, *flat_pairs(names))

    @overload
    def incrby(
        self: HCounter[Sync], key: Any, increment: Count, /, *, at: Optional[int] = ...,
        **names: Any,
    ) -> Count: ...
    @overload
    def incrby(
        self: HCounter[Async], key: Any, increment: Count, /, *, at: Optional[int] = ...,
        **names: Any,
    ) -> Awaitable[Count]: ...
    def incrby(
        self, key: Any, increment: Count, /, *, at: Optional[int] = None, **names: Any
    ) -> Any:
        """``HCOUNTER.INCRBY``: add ``increment`` (a float on a FLOAT counter)."""
        self._check(INCRBY, key, names, required=_WRITE)
        args: List[Any] = [INCRBY, key, increment]
        option(args, "AT", at)
        return self._write(key, number, *args, *flat_pairs(names))

    @overload
    def get(self: HCounter[Sync], key: Any, /, **names: Any) -> Count: ...
    @overload
    def get(self: HCounter[Async], key: Any, /, **names: Any) -> Awaitable[Count]: ...
    def get(self, key: Any, /, **names: Any) -> Any:
        """``HCOUNTER.GET``: one cell's count (0 if none)."""
        self._check(GET, key, names, required=("partition", "group"))
        return self._send(number, GET, key, *flat_pairs(names))

    @overload
    def data(self: HCounter[Sync], key: Any, /, **where: Any) -> List[Row]: ...
    @overload
    def data(self: HCounter[Async], key: Any, /, **where: Any) -> Awaitable[List[Row]]: ...
    def data(self, key: Any, /, **where: Any) -> Any:
        """``HCOUNTER.DATA``: a row per cell of the matching partitions (``where``
        takes any partition names): the names with their values, and ``value``
        with the count."""
        self._check(DATA, key, where, optional=("partition",))
        return self._send(_data_rows, DATA, key, *flat_pairs(where))

    @overload
    def partitions(self: HCounter[Sync], key: Any, /, **where: Any) -> List[Row]: ...
    @overload
    def partitions(self: HCounter[Async], key: Any, /, **where: Any) -> Awaitable[List[Row]]: ...
    def partitions(self, key: Any, /, **where: Any) -> Any:
        """``HCOUNTER.PARTITIONS``: a row per matching partition."""
        self._check(PARTITIONS, key, where, optional=("partition",))
        return self._send(rows, PARTITIONS, key, *flat_pairs(where))

    @overload
    def iter_data(
        self: HCounter[Sync], key: Any, /, *, count: Optional[int] = ..., **where: Any
    ) -> Iterator[Row]: ...
    @overload
    def iter_data(
        self: HCounter[Async], key: Any, /, *, count: Optional[int] = ..., **where: Any
    ) -> AsyncIterator[Row]: ...
    def iter_data(self, key: Any, /, *, count: Optional[int] = None, **where: Any) -> Any:
        """The rows of ``data`` (in an order of the key's own), fetched
        ``count`` at a time (``CURSOR``); ``async for`` on an asyncio client.
        Not on a pipeline (a DataError)."""
        self._check(DATA, key, where, optional=("partition",))
        return self._pages("iter_data", _data_rows, DATA, key, where, count)

    @overload
    def iter_partitions(
        self: HCounter[Sync], key: Any, /, *, count: Optional[int] = ..., **where: Any
    ) -> Iterator[Row]: ...
    @overload
    def iter_partitions(
        self: HCounter[Async], key: Any, /, *, count: Optional[int] = ..., **where: Any
    ) -> AsyncIterator[Row]: ...
    def iter_partitions(self, key: Any, /, *, count: Optional[int] = None, **where: Any) -> Any:
        """The rows of ``partitions``, fetched ``count`` at a time (``CURSOR``)."""
        self._check(PARTITIONS, key, where, optional=("partition",))
        return self._pages("iter_partitions", rows, PARTITIONS, key, where, count)

    @overload
    def delete(self: HCounter[Sync], key: Any, /, **where: Any) -> int: ...
    @overload
    def delete(self: HCounter[Async], key: Any, /, **where: Any) -> Awaitable[int]: ...
    def delete(self, key: Any, /, **where: Any) -> Any:
        """``HCOUNTER.DEL``: partitions deleted (all of them without ``where``)."""
        self._check(DEL, key, where, optional=("partition",))
        return self._send(integer, DEL, key, *flat_pairs(where))

    @staticmethod
    def _schema_of(
        partition: Optional[Names],
        group: Optional[Names],
        unique: Optional[Names],
        scope: Optional[Names],
    ) -> Schema:
        groups = {
            "partition": name_list("partition", partition),
            "group": name_list("group", group),
            "unique": name_list("unique", unique),
            "scope": name_list("scope", scope),
        }
        if groups["scope"] and not groups["unique"]:
            raise DataError("HCOUNTER.CREATE: scope needs unique")
        for names in groups.values():
            check_names(CREATE, KEYWORDS, dict.fromkeys(names, ""))
        return Schema(**groups)
