"""HCOUNTER: partitioned, grouped counters, with unique-event counting."""

from __future__ import annotations

from typing import Any, Dict, Iterator, List, Optional, Sequence, Union

from ._family import (
    Family,
    Schema,
    check_names,
    flat_pairs,
    integer,
    name_list,
    number,
    option,
    row,
    rows,
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

Names = Union[str, Sequence[str]]
Count = Union[int, float]

#: the names an INCR gives (a unique counter's UNIQUE and SCOPE names too)
_WRITE = ("partition", "group", "unique", "scope")


def _data_row(reply: Any) -> Dict[str, Any]:
    out = row(reply)
    out["value"] = number(out["value"])
    return out


def _data_rows(reply: Any) -> List[Dict[str, Any]]:
    return [_data_row(r) for r in reply]


class HCounter(Family):
    COMMANDS = (CREATE, INCR, INCRBY, GET, DATA, PARTITIONS, DEL)
    KEYWORDS = KEYWORDS

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
    ) -> bool:
        """``HCOUNTER.CREATE``: each ``partition`` tuple is a partition, each
        ``group`` tuple a cell in it; ``ttl`` seconds per partition after its
        latest write; ``float_mode`` counts doubles; ``unique`` (within
        ``scope``) counts a tuple once. A key that exists is an error."""
        schema = self._schema_of(partition, group, unique, scope)
        args: List[Any] = [CREATE, key]
        for word in ("PARTITION", "GROUP"):
            names = schema.groups[word.lower()]
            if names:
                args.extend((word, *names))
        option(args, "TTL", ttl)
        if float_mode:
            args.append("FLOAT")
        for word in ("UNIQUE", "SCOPE"):
            names = schema.groups[word.lower()]
            if names:
                args.extend((word, *names))
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

    def incr(self, key: Any, /, *, at: Optional[int] = None, **names: Any) -> Count:
        """``HCOUNTER.INCR``: the cell's count after the call (a float on a
        FLOAT counter)."""
        self._check(INCR, key, names, required=_WRITE)
        args: List[Any] = [INCR, key]
        option(args, "AT", at)
        return self._write(key, number, *args, *flat_pairs(names))

    def incrby(
        self, key: Any, increment: Count, /, *, at: Optional[int] = None, **names: Any
    ) -> Count:
        """``HCOUNTER.INCRBY``: add ``increment`` (a float on a FLOAT counter)."""
        self._check(INCRBY, key, names, required=_WRITE)
        args: List[Any] = [INCRBY, key, increment]
        option(args, "AT", at)
        return self._write(key, number, *args, *flat_pairs(names))

    def get(self, key: Any, /, **names: Any) -> Count:
        """``HCOUNTER.GET``: one cell's count (0 if none)."""
        self._check(GET, key, names, required=("partition", "group"))
        return self._send(number, GET, key, *flat_pairs(names))

    def data(self, key: Any, /, **where: Any) -> List[Dict[str, Any]]:
        """``HCOUNTER.DATA``: a row per cell of the matching partitions (``where``
        takes any partition names): the names with their values, and ``value``
        with the count."""
        self._check(DATA, key, where, optional=("partition",))
        return self._send(_data_rows, DATA, key, *flat_pairs(where))

    def partitions(self, key: Any, /, **where: Any) -> List[Dict[str, Any]]:
        """``HCOUNTER.PARTITIONS``: a row per matching partition."""
        self._check(PARTITIONS, key, where, optional=("partition",))
        return self._send(rows, PARTITIONS, key, *flat_pairs(where))

    def iter_data(self, key: Any, /, *, count: Optional[int] = None, **where: Any) -> Iterator[Dict[str, Any]]:
        """The rows of ``data`` (in an order of the key's own), fetched ``count`` at a time (``CURSOR``)."""
        self._check(DATA, key, where, optional=("partition",))
        return self._pages(_data_rows, DATA, key, where, count)

    def iter_partitions(self, key: Any, /, *, count: Optional[int] = None, **where: Any) -> Iterator[Dict[str, Any]]:
        """The rows of ``partitions``, fetched ``count`` at a time (``CURSOR``)."""
        self._check(PARTITIONS, key, where, optional=("partition",))
        return self._pages(rows, PARTITIONS, key, where, count)

    def delete(self, key: Any, /, **where: Any) -> int:
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
            raise ValueError("HCOUNTER.CREATE: scope needs unique")
        for names in groups.values():
            check_names(CREATE, KEYWORDS, dict.fromkeys(names, ""))
        return Schema(**groups)
