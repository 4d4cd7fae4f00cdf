"""README and docs/: links and their anchors resolve, every guide and study is reachable from docs/README.md and
that from the README, the quick start stays two commands, the README stays short and its three steps use options
that exist. Text moved out of the README must not silently dangle."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"\]\(([^)#\s]+)(#[^)\s]*)?\)")


def _section(text: str, heading: str) -> str:
    start = text.index(heading + "\n")
    nxt = text.find("\n## ", start + len(heading))
    return text[start:nxt if nxt >= 0 else None]


def test_quick_start_is_make_demo_and_make_test():
    quick = _section((ROOT / "README.md").read_text(), "## Quick start")
    block = quick.split("```sh\n", 1)[1].split("```", 1)[0]
    commands = [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]
    assert commands == ["make demo", "make test"]


def _anchors(md: Path) -> set[str]:
    """GitHub's anchors of a page's headings (outside code blocks)."""
    out, seen, code = set(), {}, False
    for line in md.read_text().splitlines():
        if line.startswith("```"):
            code = not code
        elif not code and line.startswith("#"):
            slug = re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def test_relative_links_and_anchors_resolve():
    broken = []
    for md in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for target, anchor in LINK.findall(md.read_text()):
            if "://" in target or target.startswith("mailto:"):
                continue
            dest = md.parent / target
            if not dest.exists():
                broken.append(f"{md.relative_to(ROOT)} -> {target}")
            elif anchor and dest.suffix == ".md" and anchor[1:] not in _anchors(dest):
                broken.append(f"{md.relative_to(ROOT)} -> {target}{anchor}")
    for md in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:     # same-page anchors
        for anchor in re.findall(r"\]\((#[^)\s]+)\)", md.read_text()):
            if anchor[1:] not in _anchors(md):
                broken.append(f"{md.relative_to(ROOT)} -> {anchor}")
    assert broken == []


def test_every_guide_and_study_is_in_the_docs_index():
    index = ROOT / "docs" / "README.md"
    assert "docs/README.md" in {t for t, _ in LINK.findall((ROOT / "README.md").read_text())}
    linked = {(index.parent / t).resolve() for t, _ in LINK.findall(index.read_text())}
    pages = {p.resolve() for p in [*(ROOT / "docs").glob("*.md"), *(ROOT / "docs" / "studies").glob("*.md")]}
    assert {p.name for p in pages - linked - {index.resolve()}} == set()


def test_readme_is_short_and_its_demo_sample_too():
    text = (ROOT / "README.md").read_text()
    assert len(text.encode()) <= 16 * 1024
    quick = _section(text, "## Quick start")
    sample = quick.split("\n```\nquery servers", 1)[1].split("```", 1)[0]     # the demo's output
    assert 0 < len(sample.splitlines()) <= 25
    assert "`--verbose`" in sample and "\nwarning " not in sample


# guides say what a command answers, how to run and read it, and its limits; the measurements go to studies/.
# These are longer for a reason of their own: statistics is reference, not a guide.
GUIDE_LINES = 160
LONGER = {"statistics.md", "couchdb-backends.md", "nouveau.md", "compare.md", "axes.md"}


def test_guides_are_short():
    long = {p.name: n for p in (ROOT / "docs").glob("*.md")
            if (n := len(p.read_text().splitlines())) > GUIDE_LINES and p.name not in LONGER}
    assert long == {}


def test_readme_steps_use_options_that_exist():
    import click

    from dragnet.cli import main
    from test_readme_steps import readme_steps

    steps = readme_steps((ROOT / "README.md").read_text())
    blocks = [b.replace("\\\n", " ") for b in re.findall(r"```sh\n(.*?)```", (ROOT / "README.md").read_text(), re.S)]
    commands = [line.split(" # ")[0].split() for b in blocks for line in b.splitlines() if line.startswith("dragnet ")]
    assert [s.split()[:2] for s in steps.values()] == [["dragnet", "couch"], ["dragnet", "bench"], ["dragnet", "forecast"]]
    for words in commands:
        cmd = main
        for word in words[1:]:
            if word.startswith("-") or not isinstance(cmd, click.Group):
                break
            cmd = cmd.get_command(click.Context(cmd), word)
        assert cmd is not None, words
        known = {o for p in cmd.params for o in p.opts}
        assert [w for w in words if w.startswith("--") and w not in known] == [], words


def _contract_layers() -> list[set[str]]:
    import configparser

    ini = configparser.ConfigParser()
    ini.read(ROOT / ".importlinter")
    layers = ini["importlinter:contract:stages"]["layers"].split("\n")
    return [{name.strip() for name in re.split(r"[|:]", line)} for line in layers if line.strip()]


def test_architecture_picture_is_the_import_contract():
    # docs/architecture.md draws the stages; .importlinter enforces them: the two must say the same
    text = (ROOT / "docs" / "architecture.md").read_text()
    picture = _section(text, "## The stages, lowest first").split("```\n", 1)[1].split("```", 1)[0]
    drawn = [set(re.split(r"\s*·\s*", line.split("  ")[1].split("(")[0].strip()))
             for line in picture.splitlines() if re.match(r"^  [a-z_]", line)]
    contract = [layer for layer in _contract_layers() if layer != {"__main__"}]
    assert drawn == contract


def test_every_package_is_a_layer_and_in_the_table():
    layers = set().union(*_contract_layers())
    packages = {p.name for p in (ROOT / "dragnet").iterdir() if (p / "__init__.py").exists()}
    modules = {p.stem for p in (ROOT / "dragnet").glob("*.py") if p.stem != "__init__"}
    assert packages | modules == layers
    table = (ROOT / "docs" / "architecture.md").read_text()
    assert {p for p in packages if f"| `{p}/` |" not in table} == set()
