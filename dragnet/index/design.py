"""A team's own design document as benchmark input: a JSON file, a couchapp-style folder or a live URL,
normalised to the one document CouchDB would index.

Only what shapes a view build is kept: `language`, every view (`map`, `reduce`), `views.lib` (CommonJS
modules for `require`) and the index `options` (`include_design`, `local_seq`, `collation`,
`partitioned`). Shows, lists, filters, updates, rewrites and validate_doc_update do not take part in
indexing and are left out (validate_doc_update would otherwise judge the writes of `--update`).
"""

from __future__ import annotations

import copy
import glob
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

from dragnet.couchdb.client import CouchError, connect, mask_url
from dragnet.errors import DragnetError, UsageError
from dragnet.servers import dialects

BUILTIN_REDUCES = ("_sum", "_count", "_stats", "_approx_count_distinct")
INDEX_OPTIONS = ("include_design", "local_seq", "collation", "partitioned")
LIB = "lib"


def map_files() -> tuple[str, ...]:
    """What the couchapp folder form reads for a view's map: one file per language (dragnet.servers.dialects)."""
    return tuple(d.view_file for d in dialects.by_language())


def reduce_files() -> tuple[str, ...]:
    """A view's reduce next to its map; a file named `reduce` holds a built-in such as `_sum`."""
    return tuple(d.reduce_file for d in dialects.by_language()) + ("reduce",)


@dataclass
class Design:
    """A normalised design document and where it came from (URLs without passwords)."""

    doc: dict
    source: str
    dropped: list[str] = field(default_factory=list)   # top-level fields left out
    nouveau: dict = field(default_factory=dict)        # its `nouveau` search indexes: {name: definition}

    @property
    def id(self) -> str:
        return self.doc["_id"]

    @property
    def language(self) -> str:
        return self.doc.get("language", "javascript")

    @property
    def view_names(self) -> list[str]:
        return [name for name in self.doc["views"] if name != LIB]

    def reduce_of(self, view: str) -> str | None:
        return self.doc["views"][view].get("reduce")

    def has_lib(self) -> bool:
        return LIB in self.doc["views"]


# ---------------------------------------------------------------- normalisation (pure)

def normalise(doc: object, where: str) -> tuple[dict, list[str]]:
    """The indexing part of a design document; raises UsageError naming `where` and the field at fault."""
    if not isinstance(doc, dict):
        raise UsageError(f"{where}: a design document must be a JSON object, not {type(doc).__name__}")
    ident = doc.get("_id", "")
    if not isinstance(ident, str) or not ident.startswith("_design/") or ident == "_design/":
        raise UsageError(f"{where}: _id must be '_design/<name>', got {ident!r}")
    language = doc.get("language", "javascript")
    if not isinstance(language, str) or not language:
        raise UsageError(f"{where}: language must be a non-empty string, got {language!r}")
    views = doc.get("views")
    if not isinstance(views, dict) or not [v for v in views if v != LIB]:
        raise UsageError(f"{where}: no views (a design document to benchmark needs at least one)")
    out_views: dict = {}
    for name, view in views.items():
        if name == LIB:
            if not isinstance(view, dict):
                raise UsageError(f"{where}: views.lib must be an object of modules, got {type(view).__name__}")
            _check_lib(view, f"{where}: views.lib")
            out_views[LIB] = view
            continue
        if not isinstance(view, dict) or not isinstance(view.get("map"), str) or not view["map"].strip():
            raise UsageError(f"{where}: view {name!r} has no map function (a non-empty string)")
        entry = {"map": view["map"]}
        if "reduce" in view:
            reduce = view["reduce"]
            if not isinstance(reduce, str) or not reduce.strip():
                raise UsageError(f"{where}: view {name!r}: reduce must be a function or one of "
                                 f"{', '.join(BUILTIN_REDUCES)}")
            reduce = reduce.strip() if reduce.strip().startswith("_") else reduce
            if reduce.startswith("_") and reduce not in BUILTIN_REDUCES:
                raise UsageError(f"{where}: view {name!r}: unknown built-in reduce {reduce!r} "
                                 f"(CouchDB has {', '.join(BUILTIN_REDUCES)})")
            entry["reduce"] = reduce
        out_views[name] = entry
    out = {"_id": ident, "language": language, "views": out_views}
    options = doc.get("options")
    if options is not None:
        if not isinstance(options, dict):
            raise UsageError(f"{where}: options must be an object, got {type(options).__name__}")
        kept = {k: options[k] for k in INDEX_OPTIONS if k in options}
        if kept:
            out["options"] = kept
    dropped = sorted(k for k in doc if k not in ("_id", "_rev", "language", "views", "options"))
    return out, dropped


def nouveau_section(doc: dict, where: str) -> dict:
    """The design document's `nouveau` indexes ({name: {"index": "function (doc) {...}", ...}}), checked."""
    section = doc.get("nouveau") if isinstance(doc, dict) else None
    if section is None:
        return {}
    if not isinstance(section, dict) or not all(
            isinstance(v, dict) and isinstance(v.get("index"), str) and v["index"].strip() for v in section.values()):
        raise UsageError(f"{where}: nouveau must be {{\"NAME\": {{\"index\": \"function (doc) {{...}}\"}}}}")
    return {name: dict(v) for name, v in section.items()}


def _design(raw: object, where: str) -> Design:
    doc, dropped = normalise(raw, where)
    nouveau = nouveau_section(raw, where)   # kept beside the views: bench builds them after the views
    return Design(doc=doc, source=where, dropped=[d for d in dropped if d != "nouveau"], nouveau=nouveau)


def _check_lib(node: dict, where: str) -> None:
    for key, value in node.items():
        if isinstance(value, dict):
            _check_lib(value, f"{where}.{key}")
        elif not isinstance(value, str):
            raise UsageError(f"{where}.{key}: a module must be a string of code, got {type(value).__name__}")


def select(design: Design, names: list[str] | None) -> Design:
    """Only the named views (views.lib stays); unknown names are an error listing the ones there are."""
    if not names:
        return design
    unknown = [n for n in names if n not in design.view_names]
    if unknown:
        raise UsageError(f"{design.source}: no view {', '.join(map(repr, unknown))} "
                         f"(it has {', '.join(design.view_names)})")
    doc = copy.deepcopy(design.doc)
    doc["views"] = {k: v for k, v in doc["views"].items() if k in names or k == LIB}
    return Design(doc=doc, source=design.source, dropped=design.dropped, nouveau=design.nouveau)


def benchmark_copy(design: Design, ddoc_id: str, *, language: str | None = None, nonce: str,
                   views: list[str] | None = None, maps_only: bool = False) -> dict:
    """The document a benchmark saves: a fresh id, the given language, `autoupdate: false` (CouchDB's
    background indexer stays out) and a nonce in options (a new index signature, so CouchDB cannot reuse
    the original's index). The original is never written.

    maps_only (a server that reads no document, the ceiling): the views' maps and built-in reduces only,
    which CouchDB computes itself; reduce functions, validation, filters, shows and lists are left out."""
    doc = copy.deepcopy(design.doc)
    if maps_only:
        doc = {"_id": doc.get("_id"), "language": doc.get("language"), "options": doc.get("options") or {},
               "views": {name: ({"map": v["map"], **({"reduce": v["reduce"]} if v.get("reduce") in BUILTIN_REDUCES
                                                    else {})} if name != LIB else v)
                         for name, v in doc.get("views", {}).items()}}
    doc["_id"] = ddoc_id
    if language:
        doc["language"] = language
    if views is not None:
        doc["views"] = {k: v for k, v in doc["views"].items() if k in views or k == LIB}
    doc["autoupdate"] = False
    doc["options"] = {**doc.get("options", {}), "dragnet_benchmark": nonce}
    return doc


# ---------------------------------------------------------------- the three input forms

def is_url(source: str) -> bool:
    return source.startswith(("http://", "https://"))


def load(source: str, *, views: list[str] | None = None, env: dict | None = None, cwd: str | None = None) -> Design:
    """A design document from a JSON file, a couchapp folder, `URL/db/_design/name` or `git:REF:path`."""
    if is_url(source):
        design = from_url(source, env=env)
    elif source.startswith(GIT_PREFIX):
        design = from_git(source, cwd=cwd)
    else:
        path = Path(source)
        if path.is_dir():
            design = from_folder(path)
        elif path.is_file():
            design = from_file(path)
        else:
            raise UsageError(f"design document {source!r}: no such file or folder (give a .json file, a "
                             f"couchapp folder or URL/db/_design/name)")
    return select(design, views)


def from_file(path: Path) -> Design:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    return _design(doc, str(path))


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def _lib_tree(folder: Path) -> dict:
    # views/lib/util.js -> {"util": "<source>"}; sub-folders nest (require('views/lib/a/b'))
    tree: dict = {}
    for p in sorted(folder.iterdir()):
        if p.name.startswith("."):
            continue
        if p.is_dir():
            tree[p.name] = _lib_tree(p)
        elif p.is_file():
            tree[p.name.rsplit(".", 1)[0] if "." in p.name else p.name] = _read_text(p)
    return tree


_MACRO = re.compile(r"^[ \t]*//[ \t]*!(code|json)[ \t]+(\S+)[ \t]*$", re.M)


def _app_value(root: Path, dotted: str, where: str):
    """What `// !json a.b` names in a couchapp folder: a/b.json (parsed), a/b.<ext> (text) or folder a/b."""
    base = root.joinpath(*dotted.split("."))
    if base.is_dir():
        return {p.name.rsplit(".", 1)[0] if p.is_file() and "." in p.name else p.name:
                _app_value(root, f"{dotted}.{p.name.rsplit('.', 1)[0] if p.is_file() else p.name}", where)
                for p in sorted(base.iterdir()) if not p.name.startswith(".")}
    hits = sorted(base.parent.glob(glob.escape(base.name) + ".*")) if base.parent.is_dir() else []
    if not hits:
        raise UsageError(f"{where}: !json {dotted}: no such file or folder in {root}")
    text = _read_text(hits[0])
    if hits[0].suffix == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise UsageError(f"{hits[0]}: not valid JSON: {exc.msg} at line {exc.lineno}") from None
    return text


def expand_macros(text: str, root: Path, where: str, seen: tuple[str, ...] = ()) -> str:
    """The couchapp tool's push-time macros: `// !code path.js` inlines that file (relative to the app's
    root, expanded in turn), `// !json a.b` defines `a.b` from the app's files, as couchapp does."""
    def one(m: re.Match) -> str:
        kind, arg = m.group(1), m.group(2)
        if kind == "code":
            path = root / arg
            if not path.is_file():
                raise UsageError(f"{where}: !code {arg}: no such file in {root}")
            if arg in seen:
                raise UsageError(f"{where}: !code {arg} includes itself")
            return expand_macros(_read_text(path), root, str(path), seen + (arg,))
        parts = arg.split(".")
        lines = [f"var {parts[0]} = {parts[0]} || {{}};"]
        for i in range(1, len(parts) - 1):
            name = ".".join(parts[:i + 1])
            lines.append(f"{name} = {name} || {{}};")
        value = json.dumps(_app_value(root, arg, where), ensure_ascii=False)
        lines.append(f"{arg} = {value};" if len(parts) > 1 else f"{parts[0]} = {value};")
        return "\n".join(lines)

    return _MACRO.sub(one, text)


def _expand_tree(node, root: Path, where: str):
    if isinstance(node, dict):
        return {k: _expand_tree(v, root, f"{where}/{k}") for k, v in node.items()}
    return expand_macros(node, root, where) if isinstance(node, str) else node


def from_folder(folder: Path) -> Design:
    """couchapp layout: `_id` (optional, else the folder name), `language`, `options.json`,
    `views/<name>/map.js` (and `reduce.js`, whose content may be a built-in such as `_sum`), `views/lib/**`;
    the couchapp macros `// !code` and `// !json` in them are expanded as `couchapp push` does."""
    where = str(folder)
    ident_file = folder / "_id"
    ident = _read_text(ident_file).strip() if ident_file.is_file() else f"_design/{folder.resolve().name}"
    doc: dict = {"_id": ident}
    lang_file = folder / "language"
    if lang_file.is_file():
        doc["language"] = _read_text(lang_file).strip()
    options_file = folder / "options.json"
    if options_file.is_file():
        try:
            doc["options"] = json.loads(_read_text(options_file))
        except json.JSONDecodeError as exc:
            raise UsageError(f"{options_file}: not valid JSON: {exc.msg} at line {exc.lineno}") from None
    views_dir = folder / "views"
    if not views_dir.is_dir():
        raise UsageError(f"{where}: no views/ folder (a couchapp keeps views/<name>/map.js)")
    views: dict = {}
    for sub in sorted(p for p in views_dir.iterdir() if p.is_dir() and not p.name.startswith(".")):
        if sub.name == LIB:
            views[LIB] = _lib_tree(sub)
            continue
        map_file = next((sub / f for f in map_files() if (sub / f).is_file()), None)
        if map_file is None:
            raise UsageError(f"{sub}: no map function ({' or '.join(map_files())})")
        view = {"map": _read_text(map_file)}
        reduce_file = next((sub / f for f in reduce_files() if (sub / f).is_file()), None)
        if reduce_file is not None:
            view["reduce"] = _read_text(reduce_file)
        views[sub.name] = view
    doc["views"] = _expand_tree(views, folder, f"{where}/views")
    nouveau_dir = folder / "nouveau"
    if nouveau_dir.is_dir():     # nouveau/<name>/index.js, as views/<name>/map.js
        doc["nouveau"] = {sub.name: {"index": _read_text(sub / "index.js")}
                          for sub in sorted(nouveau_dir.iterdir()) if (sub / "index.js").is_file()}
    return _design(doc, where)


GIT_PREFIX = "git:"


def _git(args: list[str], cwd: str | None, what: str) -> bytes:
    import subprocess

    try:
        proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, timeout=60)
    except FileNotFoundError:
        raise UsageError(f"{what}: git is not installed") from None
    if proc.returncode != 0:
        raise subprocess.CalledProcessError(proc.returncode, args, proc.stdout, proc.stderr)
    return proc.stdout


def from_git(source: str, cwd: str | None = None) -> Design:
    """`git:REF:path`: a JSON file or couchapp folder as it is at REF in the repository the command runs in
    (path relative to the current directory, as `git show REF:./path` reads it)."""
    import subprocess
    import tempfile

    spec = source[len(GIT_PREFIX):]
    ref, sep, path = spec.partition(":")
    if not sep or not ref or not path:
        raise UsageError(f"{source}: expected git:REF:path (e.g. git:main:ddocs/app.json)")
    try:
        toplevel = _git(["rev-parse", "--show-toplevel"], cwd, source).decode().strip()
        prefix = _git(["rev-parse", "--show-prefix"], cwd, source).decode().strip()
    except subprocess.CalledProcessError:
        raise UsageError(f"{source}: {Path(cwd or '.').resolve()} is not in a git repository") from None
    try:
        commit = _git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], cwd, source).decode().strip()
    except subprocess.CalledProcessError:
        raise UsageError(f"{source}: no ref {ref!r} in this repository") from None
    # the path from the repository's top: '/x' is from the top already, 'x' from the current directory
    top = os.path.normpath(path.lstrip("/") if path.startswith("/") else prefix + path)
    if top.startswith(".."):
        raise UsageError(f"{source}: {path!r} is outside the repository")
    top = "" if top == "." else top
    try:
        kind = _git(["cat-file", "-t", f"{commit}:{top}"], toplevel, source).decode().strip()
    except subprocess.CalledProcessError:
        raise UsageError(f"{source}: no path {path!r} at {ref} ({commit[:10]})") from None
    label = f"{source} ({commit[:10]})"
    if kind == "blob":
        text = _git(["show", f"{commit}:{top}"], toplevel, source)
        try:
            doc = json.loads(text.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise UsageError(f"{label}: not a JSON design document ({exc})") from None
        return _design(doc, label)
    # a couchapp folder: its files at REF into a temporary folder, read as a folder is
    listing = _git(["ls-tree", "-r", "-z", "--name-only", "--full-tree", commit, "--", top or "."], toplevel,
                   source).decode().split("\0")
    with tempfile.TemporaryDirectory(prefix="dragnet-git-") as tmp:
        root = Path(tmp) / (Path(top).name or "app")
        for name in filter(None, listing):
            dest = root / (Path(name).relative_to(top) if top else Path(name))
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(_git(["show", f"{commit}:{name}"], toplevel, source))
        design = from_folder(root)
    return Design(doc=design.doc, source=label, dropped=design.dropped, nouveau=design.nouveau)


def split_ddoc_url(url: str) -> tuple[str, str, str]:
    """'http://u:p@h:5984/my%2Fdb/_design/app' -> ('http://u:p@h:5984', 'my/db', 'app')."""
    parts = urlsplit(url)
    segments = parts.path.strip("/").split("/")
    if len(segments) < 3 or segments[-2] != "_design" or not segments[-1]:
        raise UsageError(f"{mask_url(url)}: expected URL/db/_design/name")
    prefix = "/".join(segments[:-3])          # CouchDB behind a path prefix
    base = urlunsplit((parts.scheme, parts.netloc, "/" + prefix if prefix else "", "", ""))
    return base, unquote(segments[-3]), unquote(segments[-1])


def from_url(url: str, env: dict | None = None) -> Design:
    from dragnet.couchdb.client import db_path

    base, db, name = split_ddoc_url(url)
    couch = connect(base, env=env)
    shown = f"{mask_url(base)}/{db}/_design/{name}"
    try:
        doc = couch.get(f"{db_path(db)}/_design/{name}")
    except CouchError as exc:
        raise DragnetError(f"{shown}: {exc.answered()}") from None
    return _design(doc, shown)
