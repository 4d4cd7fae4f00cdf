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
from collections.abc import Iterator, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Dialect:
    """name:      key used by server records and results ("es5", "python", ...)
    extension: the view file's suffix after "map" (".es6.js")
    family:    which languages can run the same source: "js", "python", "erlang", else the dialect's own name
    language:  the CouchDB language a file with this extension goes to when nothing else says
    noop_map:  a map function that emits nothing, or None when dragnet cannot write one"""

    name: str
    extension: str
    family: str
    language: str | None = None
    noop_map: str | None = None

    @property
    def view_file(self) -> str:
        return "map" + self.extension

    @property
    def reduce_file(self) -> str:
        return "reduce" + self.extension


_JS_NOOP = "function (doc) {}"
DIALECTS: tuple[Dialect, ...] = (
    Dialect("es5", ".js", "js", "javascript", _JS_NOOP),
    Dialect("es2015", ".es6.js", "js", "javascript", _JS_NOOP),
    Dialect("python", ".py", "python", "python", "def fun(doc):\n    return []\n"),
    Dialect("erlang", ".erl", "erlang", "erlang"),
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
