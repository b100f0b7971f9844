"""What every family shares: sending a command with the parser of its reply,
the checks a client can make before anything is sent, and the two loops that
take more than one round trip (paged reads, a write that re-creates its lost
key), each written once for the plain and the asyncio clients.

Each call goes through the client's own ``execute_command`` with one extra
option, ``recipes_reply``, naming the function that turns the server's reply
into Python values. The response callback registered for the family's command
names applies it, so the parsing happens wherever redis-py parses: at once on a
client, at ``execute()`` on a pipeline, after ``await`` on an asyncio client,
after the redirect on a cluster. A call made without the option (a plain
``execute_command("TOPN.TOP", ...)``) gets the raw reply as before.

Typing: a family is ``Family[Literal[False]]`` on a plain client and
``Family[Literal[True]]`` on an asyncio one; each method is overloaded on it, as
redis-py 8 types its module commands, so ``await arec.topn.incr(...)`` is an
``int`` to mypy and ``rec.topn.incr(...)`` one too.
"""

from __future__ import annotations

import inspect
from typing import (
    Any,
    AsyncIterator,
    Callable,
    Dict,
    Generator,
    Generic,
    Iterable,
    Iterator,
    List,
    Literal,
    Mapping,
    Optional,
    Protocol,
    Sequence,
    Tuple,
    TypeVar,
    Union,
)

import redis
import redis.asyncio.client
import redis.asyncio.cluster
import redis.client
import redis.cluster

REPLY_OPTION = "recipes_reply"

Parser = Callable[[Any], Any]

#: Literal[False] on a plain client (replies), Literal[True] on an asyncio
#: client (awaitables of them)
IsAsync = TypeVar("IsAsync", bound=bool)
Sync = Literal[False]
Async = Literal[True]


class DataError(redis.DataError, ValueError):
    """Input the client refuses before sending anything (both ``ttl`` and
    ``pxat``, a keyword as a name, a name the key's schema does not have):
    a ``redis.DataError``, so ``except redis.RedisError`` sees it, and a
    ``ValueError`` as in earlier releases."""


def apply_reply_parser(response: Any, **options: Any) -> Any:
    """The response callback of every module command (see the module doc).
    An error passes through as it is: a cluster pipeline hands its errors to
    the callbacks before raising them."""
    parse = options.get(REPLY_OPTION)
    if parse is None or isinstance(response, Exception):
        return response
    return parse(response)


class Host(Protocol):
    """What a family needs of the :class:`~redis_recipes.Recipes` it is on
    (so this module, below every family, imports none of them)."""

    client: Any
    schemas: "Dict[Tuple[str, bytes], Schema]"


#: one command to send: the parser of its reply and its arguments
Request = Tuple[Optional[Parser], Sequence[Any]]
#: a conversation of requests (see :func:`lost_key_retry`), its result at the end
Plan = Generator[Request, Any, Any]


class Pages:
    """A paged read (``CURSOR``/``COUNT``): the request for the next page, and
    the rows of each reply; ``done`` once the server's cursor is back at 0."""

    def __init__(
        self, parse: Parser, command: str, key: Any, where: Mapping[str, Any], count: Optional[int]
    ) -> None:
        self.parse = parse
        self.head: List[Any] = [command, key, *flat_pairs(where)]
        self.count = count
        self.cursor: Any = "0"
        self.done = False

    def request(self) -> List[Any]:
        args = [*self.head, "CURSOR", self.cursor]
        option(args, "COUNT", self.count)
        return args

    def rows(self, reply: Any) -> List[Dict[str, Any]]:
        self.cursor = reply[0]
        self.done = self.cursor in (b"0", "0")
        rows: List[Dict[str, Any]] = self.parse(reply[1])
        return rows


def lost_key_retry(create: Sequence[Any], parse: Optional[Parser], args: Sequence[Any]) -> Plan:
    """A write to a declared key that survives the key's loss: when the
    server answers "no such list/counter" (the key was deleted, evicted,
    expired or flushed), the key is created again from the declaration this
    client knows (CREATE is safe to repeat) and the write is tried once more."""
    try:
        return (yield parse, args)
    except redis.exceptions.ResponseError as e:
        if not is_lost_key(e):
            raise
    yield ok, create
    return (yield parse, args)


class Family(Generic[IsAsync]):
    """A family's namespace on a :class:`~redis_recipes.Recipes` (``.topn``, ...)."""

    #: every command of the family, for the response callbacks
    COMMANDS: Tuple[str, ...] = ()
    #: words that cannot be names in the family's schemas
    KEYWORDS: Tuple[str, ...] = ()

    def __init__(self, recipes: Host) -> None:
        self._recipes = recipes

    def _send(self, parse: Optional[Parser], *args: Any) -> Any:
        return self._recipes.client.execute_command(*args, **{REPLY_OPTION: parse})

    def _schema(self, key: Any) -> "Optional[Schema]":
        return self._recipes.schemas.get((type(self).__name__, key_id(key)))

    def _remember(self, key: Any, schema: "Schema") -> None:
        self._recipes.schemas[(type(self).__name__, key_id(key))] = schema

    def _check(
        self,
        command: str,
        key: Any,
        names: Mapping[str, Any],
        required: Sequence[str] = (),
        optional: Sequence[str] = (),
    ) -> None:
        """Refuse names the server would refuse: keywords always; with a known
        schema, names outside it or missing ones."""
        check_names(command, self.KEYWORDS, names)
        schema = self._schema(key)
        if schema is not None:
            schema.check(command, names, required, optional)

    def _created(self, key: Any, schema: "Schema") -> Parser:
        """The parser of a CREATE's OK, which remembers the schema once the
        server took it."""

        def parse(reply: Any) -> bool:
            self._remember(key, schema)
            return ok(reply)

        return parse

    def _pages(
        self,
        method: str,
        parse: Parser,
        command: str,
        key: Any,
        where: Mapping[str, Any],
        count: Optional[int],
    ) -> Union[Iterator[Dict[str, Any]], AsyncIterator[Dict[str, Any]]]:
        """The rows of a read, fetched in pages, one round trip a page: every
        row there throughout comes once. An iterator on a client, an async
        iterator on an asyncio client; a pipeline cannot page (each page's
        request needs the reply before it)."""
        client = self._recipes.client
        if is_pipeline(client):
            raise DataError(
                f"{method} reads page by page, each request after the reply before it, "
                "which a pipeline cannot do: call it on the client, or queue the whole "
                f"read ({method.replace('iter_', '')}) in the pipeline"
            )
        pages = Pages(parse, command, key, where, count)
        if is_async(client):
            return self._pages_async(pages)
        return self._pages_sync(pages)

    def _pages_sync(self, pages: Pages) -> Iterator[Dict[str, Any]]:
        while not pages.done:
            yield from pages.rows(self._send(None, *pages.request()))

    async def _pages_async(self, pages: Pages) -> AsyncIterator[Dict[str, Any]]:
        while not pages.done:
            for row in pages.rows(await self._send(None, *pages.request())):
                yield row

    def _write(self, key: Any, parse: Optional[Parser], *args: Any) -> Any:
        """A write to a declared key, re-created when lost (:func:`lost_key_retry`).
        Pipelines and MULTI send as they are (their replies come at ``execute()``)."""
        schema = self._schema(key)
        client = self._recipes.client
        if schema is None or schema.create is None or is_pipeline(client):
            return self._send(parse, *args)
        plan = lost_key_retry([schema.create[0], key, *schema.create[1:]], parse, args)
        return self._run_async(plan) if is_async(client) else self._run(plan)

    def _run(self, plan: Plan) -> Any:
        """Sends a plan's requests one after the other; its result."""
        request = next(plan)
        while True:
            try:
                try:
                    parse, args = request
                    reply = self._send(parse, *args)
                except redis.exceptions.ResponseError as e:
                    request = plan.throw(e)
                else:
                    request = plan.send(reply)
            except StopIteration as done:
                return done.value

    async def _run_async(self, plan: Plan) -> Any:
        """:meth:`_run`, awaiting each reply."""
        request = next(plan)
        while True:
            try:
                try:
                    parse, args = request
                    reply = await self._send(parse, *args)
                except redis.exceptions.ResponseError as e:
                    request = plan.throw(e)
                else:
                    request = plan.send(reply)
            except StopIteration as done:
                return done.value


def is_lost_key(error: Exception) -> bool:
    """The server's answer to a write on a ULIST or HCOUNTER key that is gone."""
    return str(error).startswith(("no such list", "no such counter"))


PIPELINES = (
    redis.client.Pipeline,
    redis.cluster.ClusterPipeline,
    redis.asyncio.client.Pipeline,
    redis.asyncio.cluster.ClusterPipeline,
)


def is_pipeline(client: Any) -> bool:
    """A pipeline (or MULTI) of any client: its calls are queued."""
    return isinstance(client, PIPELINES)


def is_async(client: Any) -> bool:
    return inspect.iscoroutinefunction(client.execute_command)


# ---------------------------------------------------------------- arguments


def option(args: List[Any], name: str, value: Any) -> None:
    """Append ``name value`` when value is given (not None)."""
    if value is not None:
        args.extend((name, value))


def exclusive(**given: Any) -> None:
    """Raise DataError when more than one of the named options is set."""
    set_ = [name for name, value in given.items() if value is not None and value is not False]
    if len(set_) > 1:
        raise DataError(f"{' and '.join(set_)} cannot be used together")


def name_list(option_name: str, names: Any) -> List[str]:
    """A schema's list of names: a str alone is one name, not its letters. A
    name given as bytes that are not UTF-8 becomes the str that stands for
    them (``surrogateescape``, as ``os.fsdecode`` does), which the client
    sends as those bytes and rows give back."""
    if names is None:
        return []
    if isinstance(names, (str, bytes)):
        names = [names]
    out = []
    for name in names:
        if isinstance(name, bytes):
            name = text(name)
        if not isinstance(name, str) or not name:
            raise DataError(f"{option_name}: a name must be a non-empty string, got {name!r}")
        out.append(name)
    return out


def wire_name(name: str) -> bytes:
    """A name as sent: its UTF-8 bytes, or the bytes a ``surrogateescape``
    str stands for (a name that is not UTF-8)."""
    return name.encode("utf-8", "surrogateescape")


def check_names(command: str, reserved: Iterable[str], names: Mapping[str, Any]) -> None:
    """Names the module refuses whatever the schema: keywords, empty names,
    missing values."""
    keywords = {word.upper() for word in reserved}
    for name, value in names.items():
        if not name:
            raise DataError(f"{command}: empty name")
        if name.upper() in keywords:
            raise DataError(f"{command}: {name!r} is a keyword, not a name")
        if value is None:
            raise DataError(f"{command}: no value for {name!r}")


def flat_pairs(names: Mapping[str, Any]) -> List[Any]:
    out: List[Any] = []
    for name, value in names.items():
        out.extend((wire_name(name), value))
    return out


class Schema:
    """The names a key was created with, as the client knows them (from a
    ``create`` through these Recipes, or from ``declare``). Used only to refuse
    a call before sending it; the server checks again."""

    def __init__(self, **groups: Sequence[str]) -> None:
        self.groups = groups
        #: the CREATE command that declares the key again (its name, then
        #: the arguments after the key), when the client knows all of it
        self.create: Optional[List[Any]] = None

    def names(self, *groups: str) -> List[str]:
        out: List[str] = []
        for group in groups:
            out.extend(n for n in self.groups[group] if n not in out)
        return out

    def check(
        self,
        command: str,
        names: Mapping[str, Any],
        required: Sequence[str] = (),
        optional: Sequence[str] = (),
    ) -> None:
        """Every name of the ``required`` groups given, and no name outside
        the ``required`` and ``optional`` groups."""
        want = self.names(*required)
        allowed = self.names(*required, *optional)
        unknown = [n for n in names if n not in allowed]
        missing = [n for n in want if n not in names]
        if unknown:
            raise DataError(f"{command}: unknown name(s) {unknown}; it takes {allowed}")
        if missing:
            raise DataError(f"{command}: missing name(s) {missing}")


def key_id(key: Any) -> bytes:
    """The key as bytes, to find its schema whichever way it is spelled."""
    if isinstance(key, bytes):
        return key
    if isinstance(key, str):
        return key.encode()
    return str(key).encode()


# ------------------------------------------------------------------ replies


def text(value: Any) -> str:
    """A name from a reply (bytes unless the client decodes responses)."""
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value


def pairs(reply: Any) -> List[Tuple[Any, Any]]:
    """A RESP3 map (dict) or a RESP2 flat name/value array as (name, value) pairs."""
    if isinstance(reply, dict):
        return list(reply.items())
    return list(zip(reply[0::2], reply[1::2]))


def row(reply: Any) -> Dict[str, Any]:
    return {text(name): value for name, value in pairs(reply)}


def rows(reply: Any) -> List[Dict[str, Any]]:
    return [row(r) for r in reply]


def number(value: Any) -> Any:
    """A count: an integer, or a float for a FLOAT counter (a bulk string)."""
    if isinstance(value, int):
        return value
    return float(value)


def boolean(reply: Any) -> bool:
    return bool(reply)


def ok(reply: Any) -> bool:
    return reply in (True, b"OK", "OK")


def integer(reply: Any) -> int:
    return int(reply)


def integers(reply: Any) -> List[int]:
    return [int(x) for x in reply]


def members_with(count: Callable[[Any], Any]) -> Parser:
    """A flat member, number, ... array as [(member, number), ...]."""

    def parse(reply: Any) -> List[Tuple[Any, Any]]:
        return [(member, count(n)) for member, n in zip(reply[0::2], reply[1::2])]

    return parse
