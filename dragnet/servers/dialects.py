"""View-file dialects: one record per dialect, the one place that names them.

A dialect says which file of a `views/<view>/` folder a query server runs (`map` + its extension), the
family of languages that can run it (a design doc written in one family cannot run on another's
server), the CouchDB language a file of that extension goes to by default, and a map function that
emits nothing (qsbench --ddoc times it alone as the protocol's own cost).

A query server on a new dialect is one record here (in DIALECTS, or register() for one brought at run
time) plus its own files: every reader (discovery, view files, couchapp folders, qsbench, bench) asks
this module. A user-given server (dragnet.servers.user) with a dialect that has no record gets one named
by its file extension: `"dialect": "go"` runs `views/<view>/map.go`, is its own family, and has no
no-op map.

Builders are not part of a dialect: what `dragnet servers --build` makes is an engine (ChakraCore, Bun,
PyPy's couchpy, the ceiling), and several servers share one dialect, so the step is named by the server
record (dragnet.servers.registry.Server.build).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Dialect:
    """name:      key used by server records and results ("es5", "python", ...)
    extension: the view file's suffix after "map" (".es6.js")
    family:    which languages can run the same source: "js", "python", "erlang", else the dialect's own name
    language:  the CouchDB language a file with this extension goes to when nothing else says
    noop_map:  a map function that emits nothing, or None when dragnet cannot write one
    fallbacks: other dialects whose view files a server of this one runs as they are, in order, where a view
               has no file of its own (every ES5 function is valid ES2015, so es2015 takes map.js)
    guess:     whether a server defined outside dragnet runs this dialect, from its CouchDB language, its
               command's name and every word of language and command (discovery.guess_dialect asks the
               records, the ones registered last first)"""

    name: str
    extension: str
    family: str
    language: str | None = None
    noop_map: str | None = None
    fallbacks: tuple[str, ...] = ()
    guess: Callable[[str, str, str], bool] | None = None

    @property
    def view_file(self) -> str:
        return "map" + self.extension

    @property
    def reduce_file(self) -> str:
        return "reduce" + self.extension


_JS_NOOP = "function (doc) {}"
_JS_NAME = re.compile(r"javascript|couchjs|quickjs|chakra|node|bun", re.I)
DIALECTS: tuple[Dialect, ...] = (
    Dialect("es5", ".js", "js", "javascript", _JS_NOOP,
            guess=lambda language, exe, words: bool(_JS_NAME.search(words))),
    Dialect("es2015", ".es6.js", "js", "javascript", _JS_NOOP, fallbacks=("es5",),
            guess=lambda language, exe, words: any(w in words for w in ("chakra", "es2015", "es6", "dragnet-node"))),
    Dialect("python", ".py", "python", "python", "def fun(doc):\n    return []\n",
            guess=lambda language, exe, words: "py" in language or "py" in exe or "couchpy" in words
            or words.endswith(".py")),
    Dialect("erlang", ".erl", "erlang", "erlang", guess=lambda language, exe, words: "erlang" in language),
)
# every known dialect by name: the built-in ones, then those added by register()
DIALECT = {d.name: d for d in DIALECTS}
# other spellings of a built-in dialect's extension, longest first when matching file names
_EXTRA_EXTENSIONS = {".es2015.js": "es2015"}
_BUILTIN = frozenset(DIALECT)
_EXTENSION = re.compile(r"^[a-z][a-z0-9_]*$")


def register(dialect: Dialect) -> None:
    """Adds a dialect record for this process; a built-in one cannot be replaced."""
    if dialect.name in _BUILTIN or any(dialect.extension == d.extension for d in DIALECTS):
        raise ValueError(f"dialect {dialect.name!r} ({dialect.extension}) is a built-in one")
    DIALECT[dialect.name] = dialect


def unregister(name: str) -> None:
    if name not in _BUILTIN:
        DIALECT.pop(name, None)


def known() -> tuple[Dialect, ...]:
    """Every dialect with a record, built-in ones first."""
    return tuple(DIALECT.values())


def view_files() -> tuple[str, ...]:
    """The map file name of every dialect with a record, in order."""
    return tuple(dict.fromkeys(d.view_file for d in known()))


def by_language() -> tuple[Dialect, ...]:
    """One dialect per CouchDB language, the first one: what a couchapp folder's `map.<ext>` may be."""
    seen: dict[str | None, Dialect] = {}
    for d in known():
        seen.setdefault(d.language or d.name, d)
    return tuple(seen.values())


class _ViewFiles(Mapping):
    """dialect name -> its map file, read live from the records (register() shows at once)."""

    def __getitem__(self, name: str) -> str:
        return DIALECT[name].view_file

    def __iter__(self) -> Iterator[str]:
        return iter(DIALECT)

    def __len__(self) -> int:
        return len(DIALECT)


VIEW_FILES: Mapping[str, str] = _ViewFiles()


def is_extension_name(name: str) -> bool:
    """A name that can be a file extension of its own dialect (lower-case letters, digits, _)."""
    return bool(_EXTENSION.match(name))


def get(name: str) -> Dialect:
    """The dialect of that name; an unknown one is named by its extension (`go` -> map.go)."""
    if name in DIALECT:
        return DIALECT[name]
    if not is_extension_name(name):
        raise ValueError(f"bad dialect {name!r}: a known one ({', '.join(DIALECT)}) or a file extension "
                         "(lower-case letters, digits, _)")
    return Dialect(name, "." + name, name)


def map_file(folder: str | Path, name: str) -> Path:
    """The file of a view folder a server of dialect `name` runs: its own, else the first of its fallbacks'
    that is there; its own (missing) when none is."""
    d = get(name)
    own = Path(folder) / d.view_file
    if own.is_file():
        return own
    for alt in d.fallbacks:
        f = Path(folder) / view_file(alt)
        if f.is_file():
            return f
    return own


def guess(language: str, exe: str, words: str) -> str | None:
    """The dialect whose record's guess says so (lower-cased inputs), the records registered last asked first;
    None when none does."""
    for d in reversed(known()):
        if d.guess is not None and d.guess(language, exe, words):
            return d.name
    return None


def family(name: str) -> str:
    return get(name).family


def view_file(name: str) -> str:
    return get(name).view_file


def from_filename(path: str) -> Dialect | None:
    """The known dialect of a view file by its extension (longest suffix first), or None."""
    low = path.lower()
    pairs = [(d.extension, d) for d in known()] + [(e, DIALECT[n]) for e, n in _EXTRA_EXTENSIONS.items()]
    for ext, d in sorted(pairs, key=lambda p: len(p[0]), reverse=True):
        if low.endswith(ext):
            return d
    return None


def default_for_family(fam: str) -> Dialect | None:
    """The dialect a family's language runs when a file's extension does not say (js: es5)."""
    return next((d for d in known() if d.family == fam), None)


def noop_map(fam: str) -> str | None:
    d = default_for_family(fam)
    return d.noop_map if d else None
