"""Render evidence folders with one version of dragnet, or compare two such renders.

    # every folder `dragnet report` reads under docs/ and benchmarks/ (results, a manifest, a forecast)
    python tools/render_check.py folders ROOT > folders.txt
    # from the tree holding the folders, each version with its own interpreter and its tree's dragnet (SRC)
    cd NEW && OLD/.venv/bin/python tools/render_check.py render folders.txt /tmp/before OLD
    cd NEW && .venv/bin/python tools/render_check.py render folders.txt /tmp/after .
    python tools/render_check.py compare /tmp/before /tmp/after     # one line per folder and format

Each folder is rendered in every format `report` has (table, markdown, csv, json, and the --html page),
in one process through click's test runner (a process per render would take hours on a shared machine).
The renders are for reading the differences; they are not kept in the repository.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

FORMATS = {"table": ["--format", "table"], "markdown": ["--format", "markdown"], "csv": ["--format", "csv"],
           "json": ["--format", "json"], "html": None}
MARKERS = ("bench.json", "forecast.json", "active_tasks.jsonl")
SCHEMAS = ("dragnet.addview/", "dragnet.nouveau/")


def folders(root: Path) -> list[str]:
    """Every folder under docs/ and benchmarks/ that directly holds a results file, a bench manifest, a
    forecast or a recorded build."""
    found = set()
    for base in ("docs", "benchmarks"):
        for f in (root / base).rglob("*"):
            if not f.is_file():
                continue
            here = str(f.parent.relative_to(root))
            if f.name in MARKERS:
                found.add(here)
            elif f.suffix == ".json":
                try:
                    doc = json.loads(f.read_text())
                except (ValueError, UnicodeDecodeError):
                    continue
                if isinstance(doc, dict) and str(doc.get("schema", "")).startswith(SCHEMAS):
                    found.add(here)
    return sorted(found)


def render(folder_list: Path, out: Path) -> None:
    from click.testing import CliRunner

    from dragnet.cli import main

    print(f"dragnet from {Path(sys.modules['dragnet'].__file__).parent}", file=sys.stderr)
    out.mkdir(parents=True, exist_ok=True)
    runner = CliRunner()
    for d in folder_list.read_text().split():
        name = d.replace("/", "_")
        for fmt, args in FORMATS.items():
            if args is None:
                page = out / f"{name}.html.d"
                shutil.rmtree(page, ignore_errors=True)
                args = ["--html", str(page)]
            res = runner.invoke(main, ["report", d, *args], catch_exceptions=True)
            text = res.stdout + (f"\n--- stderr\n{res.stderr}" if res.stderr else "")
            if res.exception is not None and not isinstance(res.exception, SystemExit):
                text += f"\n--- exception\n{type(res.exception).__name__}: {res.exception}"
            if args[0] == "--html" and (page / "index.html").is_file():
                raws = sorted(p.name for p in (page / "raw").iterdir()) if (page / "raw").is_dir() else []
                text += "\n--- page\n" + "\n".join(map(_short, (page / "index.html").read_text().splitlines()))
                text += "\n--- raw\n" + "\n".join(raws)
                shutil.rmtree(page)
            (out / f"{name}.{fmt}").write_text(text + f"\nrc={res.exit_code}\n")
        print(d, flush=True)


def _short(line: str) -> str:
    """A page's line, a long one (the embedded plotly.js, a chart's data) as its length and digest."""
    import hashlib

    if len(line) < 4000:
        return line
    return f"<{len(line):,} characters, sha256 {hashlib.sha256(line.encode()).hexdigest()[:16]}>"


def compare(before: Path, after: Path) -> None:
    """A line per rendered file: same, or differs with the count of lines added and removed."""
    import difflib

    for f in sorted(after.iterdir()):
        b = before / f.name
        if not b.exists():
            print(f"only-after {f.name}")
            continue
        # the page's folder is named in the output: the same place in both
        old = b.read_text().replace(str(before), "OUT").splitlines()
        new = f.read_text().replace(str(after), "OUT").splitlines()
        if old == new:
            print(f"same     {f.name}")
            continue
        diff = [x for x in difflib.unified_diff(old, new, lineterm="", n=0) if x[:1] in "+-" and x[:3] not in
                ("+++", "---")]
        print(f"differs  {f.name} +{sum(x[0] == '+' for x in diff)} -{sum(x[0] == '-' for x in diff)}")


if __name__ == "__main__":
    cmd, *rest = sys.argv[1:] or ["help"]
    if cmd == "folders":
        print("\n".join(folders(Path(rest[0]))))
    elif cmd == "render":
        sys.path.insert(0, os.path.abspath(rest[2] if len(rest) > 2 else "."))
        render(Path(rest[0]), Path(rest[1]))
    elif cmd == "compare":
        compare(Path(rest[0]), Path(rest[1]))
    else:
        sys.exit(__doc__)
