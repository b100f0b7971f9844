"""The README's examples, replayed on an empty server: each ``>>>`` line is
sent as written and must answer as the README shows (``...`` stands for a
time or a size that differs from run to run)."""

from __future__ import annotations

import doctest
from pathlib import Path

import redis

from redis_recipes import Recipes

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_examples_replay(server):
    client = redis.Redis(port=server.port, socket_timeout=10)
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
    client.close()
    assert result.attempted > 30
    assert result.failed == 0, f"{result.failed} README examples answer otherwise (see above)"
