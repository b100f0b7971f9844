"""The package as pip installs it: the version is the module's release
(Cargo.toml's), and the wheel built from this tree, installed into a fresh
venv (with redis-py from the package index), replays the README there
against a real server, with the license and the project's addresses in its
metadata."""

from __future__ import annotations

import email
import re
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import redis_recipes

HERE = Path(__file__).resolve().parent
PACKAGE = HERE.parent
ROOT = PACKAGE.parent.parent


def module_version() -> str:
    found = re.search(r'^version = "([^"]+)"', (ROOT / "Cargo.toml").read_text(), re.M)
    assert found, "Cargo.toml names no version"
    return found.group(1)


def test_version_is_the_module_release():
    pyproject = re.search(r'^version = "([^"]+)"', (PACKAGE / "pyproject.toml").read_text(), re.M)
    assert pyproject and pyproject.group(1) == module_version()
    assert redis_recipes.__version__ == module_version()


def run(*args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(args, capture_output=True, text=True, timeout=600, **kwargs)
    assert out.returncode == 0, f"{' '.join(args)}:\n{out.stdout}{out.stderr}"
    return out


def test_the_built_wheel_installs_and_replays_the_readme(server, tmp_path):
    run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(PACKAGE))
    (wheel,) = tmp_path.glob("redis_recipes-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        meta = email.message_from_bytes(z.read(metadata))
    assert "redis_recipes/py.typed" in names and "redis_recipes/client.py" in names
    assert not [n for n in names if "tests/" in n or n.endswith(".pyc")]
    assert meta["Version"] == module_version()
    assert meta["License-Expression"] == "BSD-3-Clause"
    urls = dict(u.split(", ", 1) for u in meta.get_all("Project-URL") or [])
    assert {"Homepage", "Source"} <= set(urls), urls
    env = tmp_path / "venv"
    venv.create(env, with_pip=True)
    python = str(env / "bin" / "python")
    run(python, "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel))
    replay = (
        "import sys; sys.path.insert(0, sys.argv[1]); import redis_recipes, test_readme; "
        "assert redis_recipes.__file__.startswith(sys.prefix), redis_recipes.__file__; "
        "attempted, failed = test_readme.replay(int(sys.argv[2])); "
        "print(attempted, failed); sys.exit(1 if failed or attempted < 30 else 0)"
    )
    # from the venv's own directory: nothing of this tree on the path but the tests
    run(python, "-I", "-c", replay, str(HERE), str(server.port), cwd=str(env))
