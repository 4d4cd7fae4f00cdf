"""View files: loading, language detection (header line, then extension), CouchDB language names.

A view file holds one map function. Its first lines may declare the language in a comment:
`// dragnet: language=javascript`, `# dragnet: language=python`, `%% dragnet: language=erlang`.
Without one, the extension decides: `.es6.js` and `.js` -> javascript, `.py` -> python, `.erl` -> erlang
(dragnet.servers.dialects), or a user-given server's own (`--server go=...`: `.go` -> go).
`--language` overrides both (e.g. run map.js on `javascript_quickjs` or `chakra`, map.py on `pypy3`).
The header line is dragnet's, not the function's: it is removed from the source sent to CouchDB.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from dragnet.errors import UsageError
from dragnet.servers import dialects, user
from dragnet.servers.registry import LANGUAGES as QS_LANGUAGES

# CouchDB language name (the design doc's "language") -> (dialect family, what runs it)
LANGUAGES: dict[str, tuple[str, str]] = {lang.name: (lang.family, lang.description) for lang in QS_LANGUAGES}

# convenience spellings accepted by --language and in headers
ALIASES = {
    "js": "javascript", "es5": "javascript", "es2015": "javascript", "es6": "javascript",
    **{alias: lang.name for lang in QS_LANGUAGES for alias in lang.aliases},   # couchjs, pypy, erl, ...
}


_HEADER = re.compile(r"^\s*(?://|#|%+|--)\s*dragnet:\s*(.*?)\s*(?:\*/)?\s*$")
_NAME = re.compile(r"^[a-z][a-z0-9_+-]*$")


@dataclass(frozen=True)
class ViewFile:
    path: str
    source: str          # what goes into the design doc (dragnet header line removed)
    language: str        # CouchDB language name
    dialect: str         # es5 | es2015 | python | erlang | unknown
    detected_from: str   # option | header | extension
    known: bool          # language is one dragnet knows (unknown names go to CouchDB as they are)


def canonical_language(name: str) -> str:
    n = name.strip().lower()
    return ALIASES.get(n, n)


def parse_header(text: str) -> dict[str, str]:
    """`key=value` pairs of the first `dragnet:` comment within the first 5 lines."""
    for line in text.splitlines()[:5]:
        m = _HEADER.match(line)
        if m:
            pairs = {}
            for part in m.group(1).replace(",", " ").split():
                k, sep, v = part.partition("=")
                if sep:
                    pairs[k.strip().lower()] = v.strip()
            return pairs
    return {}


def strip_header(text: str) -> str:
    """Remove dragnet header lines (only those) from the top of the source."""
    lines = text.splitlines(keepends=True)
    i = 0
    while i < min(len(lines), 5) and _HEADER.match(lines[i]):
        i += 1
    return "".join(lines[i:])


def from_extension(path: str) -> tuple[str, str] | None:
    """(language, dialect) by the file's extension: a built-in dialect's, else a user-given server's
    (dragnet.servers.user: `--server go=...` takes map.go)."""
    d = dialects.from_filename(path)
    if d is not None:
        return d.language, d.name
    low = path.lower()
    spec = next((s for s in user.active() if low.endswith(dialects.get(s.dialect).extension)), None)
    return (spec.language, spec.dialect) if spec else None


def detect(path: str, text: str, override: str | None = None) -> tuple[str, str, str]:
    """(language, dialect, detected_from) for a file; raises UsageError when nothing tells."""
    by_ext = from_extension(path)
    header = parse_header(text).get("language")
    if override:
        lang, how = canonical_language(override), "option"
    elif header:
        lang, how = canonical_language(header), "header"
    elif by_ext:
        lang, how = by_ext[0], "extension"
    else:
        raise UsageError(f"{path}: cannot tell the view's language: no `dragnet: language=...` header line "
                         f"and an unknown extension (use .js, .es6.js, .py, .erl or --language)")
    if not _NAME.match(lang):
        raise UsageError(f"{path}: {lang!r} is not a language name")
    own = user.find(lang)
    if by_ext:
        dialect = by_ext[1]
    elif lang in LANGUAGES:
        dialect = dialects.default_for_family(LANGUAGES[lang][0]).name
    elif own is not None:
        dialect = own.dialect
    else:
        dialect = "unknown"
    if own is not None and dialect != "unknown" and dialects.family(dialect) != dialects.family(own.dialect):
        raise UsageError(f"{path}: a {dialect} file cannot run on {own.name!r}, which runs "
                         f"{dialects.get(own.dialect).view_file} files")
    if lang in LANGUAGES and dialect != "unknown" and LANGUAGES[lang][0] not in (dialects.family(dialect), "any"):
        raise UsageError(f"{path}: a {dialect} file cannot run on language {lang!r} "
                         f"({LANGUAGES[lang][1]}); pick a {LANGUAGES[lang][0]} file or another --language")
    return lang, dialect, how


def load(path: str | Path, language: str | None = None) -> ViewFile:
    """Read a view file and work out its language; one-line UsageError for a missing/empty/undecodable file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"view file not found: {p}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{p}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise UsageError(f"cannot read view file {p}: {exc.strerror}") from None
    lang, dialect, how = detect(str(p), text, language)
    source = strip_header(text)
    if not source.strip():
        raise UsageError(f"{p}: holds no function")
    return ViewFile(path=str(p), source=source, language=lang, dialect=dialect, detected_from=how,
                    known=lang in LANGUAGES)


def load_reduce(value: str | None) -> str | None:
    """`_sum`, `_count`, `_stats` (CouchDB built-ins) or the path of a file holding a reduce function."""
    if value is None:
        return None
    if value.startswith("_"):
        if value not in ("_sum", "_count", "_stats", "_approx_count_distinct"):
            raise UsageError(f"unknown built-in reduce {value!r} (use _sum, _count, _stats, or a file)")
        return value
    p = Path(value)
    try:
        text = strip_header(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot read reduce file {p}: {exc.strerror}") from None
    if not text.strip():
        raise UsageError(f"{p}: holds no reduce function")
    return text


def default_view_name(path: str | Path) -> str:
    """The view's name from its folder: views/income/map.js -> income."""
    name = Path(path).resolve().parent.name
    return name if re.fullmatch(r"[A-Za-z0-9_-]+", name or "") else "view"


def design_view(design, language: str | None = None) -> ViewFile:
    """A whole design document (dragnet.index.design.Design) seen as one view source on `language` (default: the
    document's own). A document written for one family cannot run on another's server."""
    own = canonical_language(design.language)
    lang = canonical_language(language) if language else own
    if not _NAME.match(lang):
        raise UsageError(f"{lang!r} is not a language name")
    fam_own = LANGUAGES.get(own, ("unknown",))[0]
    fam = LANGUAGES.get(lang, ("unknown",))[0]
    if "unknown" not in (fam, fam_own) and "any" not in (fam, fam_own) and fam != fam_own:
        raise UsageError(f"{design.source} is written in {own!r} ({fam_own}); it cannot run on {lang!r} "
                         f"({LANGUAGES[lang][1]})")
    d = dialects.default_for_family(fam_own if fam == "any" else fam)   # "any": a server that reads no document
    dialect = d.name if d else (user.find(lang).dialect if user.find(lang) else fam)
    import json

    return ViewFile(path=design.source, source=json.dumps(design.doc["views"], ensure_ascii=False),
                    language=lang, dialect=dialect, detected_from="option" if language else "design",
                    known=lang in LANGUAGES)


def coverage(specs, root: str | Path) -> list[tuple[str, str, str, bool]]:
    """(view, server, its file's name, whether the folder has it) for every view folder under `root` (or `root` itself when it holds
    map files) and every server: which servers have which views (`dragnet servers --views DIR`)."""
    root = Path(root)
    if not root.is_dir():
        raise UsageError(f"--views {root}: not a folder")
    folders = [root] if any(root.glob("map.*")) else sorted(d for d in root.iterdir() if any(d.glob("map.*")))
    if not folders:
        raise UsageError(f"--views {root}: no view folders (folders holding map.* files)")
    out = []
    for folder in folders:
        for spec in specs:
            f = dialects.map_file(folder, spec.dialect)
            out.append((folder.name, spec.name, f.name, f.is_file()))
    return out
