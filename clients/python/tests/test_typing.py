"""The package as a typed program sees it: ``mypy --strict`` on
``typed_usage.py`` (sync and asyncio calls, each reply's type, and calls
that must stay type errors) and on the package itself. No server needed."""

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def test_typed_usage_passes_mypy_strict():
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental",
         str(HERE / "typed_usage.py"), str(HERE.parent / "src" / "redis_recipes")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
