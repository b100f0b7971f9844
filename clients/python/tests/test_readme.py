"""The README's examples, replayed on an empty server: each ``>>>`` line is
sent as written and must answer as the README shows (``...`` stands for a
time or a size that differs from run to run)."""

from __future__ import annotations

import doctest
from pathlib import Path

import redis

from redis_recipes import Recipes

README = Path(__file__).resolve().parent.parent / "README.md"


def replay(port: int) -> tuple[int, int]:
    """Replays the README on the server at ``port`` (flushed first); prints
    each example that answers otherwise; returns (attempted, failed).
    ``docs/check.py`` runs it too."""
    client = redis.Redis(port=port, socket_timeout=10)
    client.flushall()
    # A code fence ends an example's expected output, as a blank line does.
    text = "\n".join(
        "" if line.lstrip().startswith("```") else line
        for line in README.read_text().splitlines()
    )
    globs = {"rec": Recipes(client), "redis": redis}
    test = doctest.DocTestParser().get_doctest(text, globs, "README.md", str(README), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    result = runner.run(test)
    client.flushall()
    client.close()
    return result.attempted, result.failed


def test_readme_examples_replay(server):
    attempted, failed = replay(server.port)
    assert attempted > 30
    assert failed == 0, f"{failed} README examples answer otherwise (see above)"
