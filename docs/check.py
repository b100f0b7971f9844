#!/usr/bin/env python3
"""Checks the documentation against the repository and a real server.

    make run                          # one terminal: a server with the module (port 6399)
    python3 docs/check.py [PORT]      # another: every check below
    python3 docs/check.py --offline   # all but the sessions (no server needed)

- Links: every relative link of README.md and docs/**/*.md names a file of the
  repository, and its #anchor a heading of that file.
- No file outside the repository is named (no absolute /work paths, no ../shared).
- Command reference: each docs/commands/<family>.md has a section per command of
  commands.json with its syntax, complexity, ACL categories, flags and tips as
  the command table (src/<family>/docs.rs) generates them, so the pages and
  `COMMAND DOCS` agree.
- Sessions: every line `127.0.0.1:6399> command` in a code block is sent to the
  server, and the lines after it, up to the next prompt or the end of the block,
  must be what redis-cli prints. One redis-cli connection per block (RESP3 when
  the block starts with a line `$ redis-cli -3 ...`); the server is flushed
  before each file, so it refuses a server that already holds keys.
- The Python client's README: its `>>>` examples replayed on the same server
  (by `clients/python/tests/test_readme.py`, with the Python of RECIPES_PYTHON,
  else of the venv `make test-clients` makes in target/clients-venv).

Standard library only; redis-cli on PATH (or REDIS_CLI).
"""

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROMPT = re.compile(r"^127\.0\.0\.1:6399(\[\d+\])?> (.*)$")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
OUTSIDE = re.compile(r"/work/|\.\./shared|shared/(seeds|servers|SPEC)")
FAMILIES = ["rv", "tl", "topn", "ulist", "hcounter"]
SLOW = re.compile(r"^\(\d+\.\d+s\)$")


def doc_files():
    return [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))


def code_blocks(text):
    """(first line number, lines) of each fenced code block, without the
    indentation of its fence (a block inside a list item)."""
    blocks, current, start, indent = [], None, 0, 0
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            if current is None:
                current, start = [], number + 1
                indent = len(line) - len(line.lstrip())
            else:
                blocks.append((start, current))
                current = None
        elif current is not None:
            current.append(line[indent:] if line[:indent].isspace() else line)
    return blocks


def prose(text):
    """The text outside code blocks (links in code are not links)."""
    out, inside = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            inside = not inside
        elif not inside:
            out.append(line)
    return "\n".join(out)


def slug(heading):
    """GitHub's anchor for a heading."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    seen, out = {}, set()
    for line in prose(path.read_text()).splitlines():
        m = re.match(r"^#{1,6} (.*)", line)
        if m:
            base = slug(m.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
    return out


def check_links(errors):
    for path in doc_files():
        text = path.read_text()
        rel = path.relative_to(ROOT)
        for number, line in enumerate(text.splitlines(), 1):
            if OUTSIDE.search(line):
                errors.append(f"{rel}:{number}: names a file outside the repository")
        for target in LINK.findall(prose(text)):
            if re.match(r"^[a-z]+:", target):
                continue  # http(s), mailto: not checked here
            file, _, anchor = target.partition("#")
            dest = (path.parent / file).resolve() if file else path
            if not dest.exists():
                errors.append(f"{rel}: link to {target}: no such file")
            elif not str(dest).startswith(str(ROOT)):
                errors.append(f"{rel}: link to {target}: outside the repository")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                errors.append(f"{rel}: link to {target}: no such heading")


def render(arg):
    """An argument as redis.io writes a command's syntax."""
    kind = arg["type"]
    if kind == "oneof":
        text = " | ".join(render(a) for a in arg["arguments"])
        if not arg.get("optional"):
            text = f"<{text}>"
    elif kind == "block":
        text = " ".join(render(a) for a in arg["arguments"])
    elif kind == "pure-token":
        text = arg["token"]
    else:
        text = arg["name"]
    if arg.get("multiple"):
        text = f"{text} [{text} ...]"
    if arg.get("token") and kind != "pure-token":
        text = f"{arg['token']} {text}"
    if arg.get("optional"):
        text = f"[{text}]"
    return text


def syntax(name, command):
    return " ".join([name] + [render(a) for a in command.get("arguments", [])])


def check_reference(errors):
    commands = json.loads((ROOT / "commands.json").read_text())
    for family in FAMILIES:
        path = ROOT / "docs" / "commands" / f"{family}.md"
        text = path.read_text() if path.exists() else ""
        sections = re.split(r"^## ", text, flags=re.M)
        by_name = {s.split("\n", 1)[0].strip(): s for s in sections[1:]}
        for name, command in commands.items():
            if command["group"] != family:
                continue
            section = by_name.get(name)
            where = f"docs/commands/{family}.md"
            if section is None:
                errors.append(f"{where}: no section '## {name}'")
                continue
            expected = [
                syntax(name, command),
                f"Complexity: {command['complexity']}",
                "ACL categories: " + ", ".join(f"`{c}`" for c in command["acl_categories"]),
                "Flags: " + ", ".join(f"`{f}`" for f in command["command_flags"] if f != "module"),
            ] + [f"Tips: `{tip}`" for tip in command.get("hints", [])]
            for line in expected:
                if line not in section:
                    errors.append(f"{where}: section {name} lacks the line:\n    {line}")


def cli():
    return os.environ.get("REDIS_CLI", "redis-cli")


def run_block(port, lines, options=()):
    """Sends the commands a line at a time (a few ms apart, so no two writes
    share the server's millisecond) on one connection; returns the output."""
    proc = subprocess.Popen(
        [cli(), "--no-raw", *options, "-p", str(port)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    # A first PING answered: redis-cli now reads each line as it comes.
    proc.stdin.write("PING\n")
    proc.stdin.flush()
    proc.stdout.readline()
    for line in lines:
        proc.stdin.write(line + "\n")
        proc.stdin.flush()
        time.sleep(0.005)
    out, _ = proc.communicate(timeout=60)
    return out


def sessions(text):
    """(line number, redis-cli options, [(command, expected reply lines)]) per
    block with prompts. A line `$ redis-cli -3 ...` before them asks for RESP3."""
    for start, lines in code_blocks(text):
        steps, options = [], []
        for line in lines:
            m = PROMPT.match(line)
            if m:
                steps.append((m.group(2), []))
            elif steps:
                steps[-1][1].append(line.rstrip())
            elif line.startswith("$ redis-cli") and " -3" in line:
                options = ["-3"]
        if steps:
            yield start, options, steps


def check_sessions(port, errors):
    def call(*args):
        return subprocess.run(
            [cli(), "-p", str(port), *args], capture_output=True, text=True, check=True
        ).stdout.strip()

    if call("PING") != "PONG":
        sys.exit(f"no server on port {port}: start one with `make run`")
    if call("INFO", "keyspace").strip() != "# Keyspace":
        sys.exit(f"the server on port {port} holds keys: use a scratch server (make run)")
    checked = 0
    for path in doc_files():
        rel = path.relative_to(ROOT)
        call("FLUSHALL")
        for start, options, steps in sessions(path.read_text()):
            out = run_block(port, [command for command, _ in steps], options)
            expected = [line for _, reply in steps for line in reply]
            # redis-cli adds "(0.58s)" after a reply that took over half a
            # second (a loaded machine); it is not the server's answer.
            got = [line.rstrip() for line in out.splitlines() if not SLOW.match(line)]
            checked += len(steps)
            if got != expected:
                errors.append(f"{rel}:{start}: the session answers differently")
                for command, reply in steps:
                    errors.append(f"    > {command}")
                    errors.extend(f"      {line}" for line in reply)
                errors.append("  the server printed:")
                errors.extend(f"      {line}" for line in got)
    call("FLUSHALL")
    print(f"sessions: {checked} commands checked")


def check_python_readme(port, errors):
    python = os.environ.get("RECIPES_PYTHON") or str(ROOT / "target/clients-venv/bin/python")
    if not Path(python).exists():
        errors.append(f"clients/python/README.md: no {python} to replay it (make test-clients makes it)")
        return
    replay = (
        "import sys; sys.path.insert(0, sys.argv[1]); from test_readme import replay; "
        "print(*replay(int(sys.argv[2])))"
    )
    tests = ROOT / "clients/python/tests"
    done = subprocess.run(
        [python, "-c", replay, str(tests), str(port)], capture_output=True, text=True, timeout=300
    )
    counts = done.stdout.strip().splitlines()[-1:] if done.returncode == 0 else []
    attempted, failed = (int(n) for n in counts[0].split()) if counts else (0, -1)
    if failed != 0 or attempted == 0:
        errors.append("clients/python/README.md: examples answer otherwise:")
        errors.extend(f"    {line}" for line in (done.stdout + done.stderr).splitlines())
    else:
        print(f"python README: {attempted} examples replayed")


def main():
    args = sys.argv[1:]
    if args[:1] == ["--syntax"]:
        for name, command in json.loads((ROOT / "commands.json").read_text()).items():
            print(syntax(name, command))
        return
    errors = []
    check_links(errors)
    check_reference(errors)
    if args[:1] != ["--offline"]:
        port = int(args[0]) if args else 6399
        check_sessions(port, errors)
        check_python_readme(port, errors)
    for error in errors:
        print(error)
    print("docs: ok" if not errors else f"docs: {len(errors)} problem lines")
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
