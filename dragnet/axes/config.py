"""The `--config SECTION/KEY=V1,V2` bench axis: CouchDB settings set through /_node/_local/_config.

A setting given with --config-restart is not set live: it is written into the managed CouchDB's ini and
CouchDB restarted (dragnet.bench.switch), checked by reading it back, and undone by a restart without it;
sections CouchDB refuses over HTTP (native_query_servers, query_servers, …) can only be given that way.

Pure parts: parsing, the keys a default.ini knows (its commented-out examples included: most settings ship
commented), the keys a version's code reads and its default.ini names (the catalogue:
catalogue/couchdb-<version>.json, made from apache/couchdb's sources at the release tag by
tools/config_catalogue.py), the nearest known key for a
typo, and whether a key applies to a version. The rest sets a value
on the running node, reads it back, and puts the value found before back afterwards (deleting a key that
was not set), which the bench does in a finally block, so also on Ctrl-C and SIGTERM (dragnet.signals).
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from dragnet.couchdb.client import Couch, CouchError
from dragnet.errors import DragnetError, UsageError

_SECTION = re.compile(r"^\s*;?\s*\[([^\]\s]+)\]\s*$")
_KEY = re.compile(r"^\s*;?\s*([A-Za-z0-9_.\-]+)\s*=")
CATALOGUE_DIR = Path(__file__).with_name("catalogue")
ANY = "*"   # (section, ANY): the code reads the section whole or by a computed key, so any key of it counts


@dataclass(frozen=True)
class Setting:
    section: str
    key: str
    values: tuple[str, ...]
    restart: bool = False     # --config-restart: written into the ini and CouchDB restarted, not set live

    @property
    def name(self) -> str:
        return f"{self.section}/{self.key}"

    def label(self, value: str) -> str:
        return f"{self.name}={value}"


def parse(text: str, restart: bool = False) -> Setting:
    """'view_updater/gc_interval_docs=1,1000,infinity' -> Setting; a one-line UsageError otherwise."""
    where = f"--config{'-restart' if restart else ''} {text}"
    name, eq, values = text.partition("=")
    section, slash, key = name.strip().partition("/")
    if not eq or not slash or not section or not key or "/" in key:
        raise UsageError(f"{where}: expected SECTION/KEY=V1,V2,… (e.g. view_updater/gc_interval_docs=1,1000)")
    vals = [v.strip() for v in values.split(",")]
    if not all(vals):
        raise UsageError(f"{where}: an empty value")
    if len(set(vals)) != len(vals):
        raise UsageError(f"{where}: a value given twice")
    return Setting(section.strip(), key.strip(), tuple(vals), restart)


def parse_all(texts: list[str], restart_texts: list[str] | None = None) -> list[Setting]:
    out = [parse(t) for t in texts] + [parse(t, restart=True) for t in restart_texts or []]
    names = [s.name for s in out]
    for n in names:
        if names.count(n) > 1:
            raise UsageError(f"--config {n} given twice: list its values in one --config")
    return out


def known_keys(default_ini: str) -> set[tuple[str, str]]:
    """(section, key) of every setting default.ini names, set or commented out (';key = value')."""
    keys: set[tuple[str, str]] = set()
    section = None
    for line in default_ini.splitlines():
        m = _SECTION.match(line)
        if m:
            section = m.group(1)
            continue
        m = _KEY.match(line)
        if m and section is not None and not line.lstrip(";").lstrip().startswith(";"):
            keys.add((section, m.group(1)))
    return keys


def catalogue(version: str | None) -> set[tuple[str, str]] | None:
    """(section, key) of every setting CouchDB `version`'s code reads or its default.ini names, (section, ANY)
    for a section the code reads whole; None for a version dragnet has no catalogue of."""
    path = CATALOGUE_DIR / f"couchdb-{version}.json"
    if not version or "/" in version or not path.is_file():
        return None
    doc = json.loads(path.read_text())
    return ({(e["section"], e["key"]) for e in doc["settings"]}
            | {(sec, ANY) for sec in doc.get("open_sections", {})})


def catalogued() -> list[str]:
    """The CouchDB versions dragnet has a catalogue of."""
    return sorted(p.stem[len("couchdb-"):] for p in CATALOGUE_DIR.glob("couchdb-*.json"))


def knows(keys: set[tuple[str, str]], section: str, key: str) -> bool:
    return (section, key) in keys or (section, ANY) in keys


def keys_of(version: str | None, default_ini: str | None) -> tuple[set[tuple[str, str]], str]:
    """What counts as a setting of an install: its version's catalogue and its default.ini; and where that
    came from ("catalogue", "default.ini": partial, the code may read more, or "" when nothing is known)."""
    cat = catalogue(version)
    keys = (cat or set()) | (known_keys(default_ini) if default_ini is not None else set())
    return keys, "catalogue" if cat is not None else "default.ini" if default_ini is not None else ""


def partial_warning(version: str | None, source: str) -> str | None:
    """The warning for a check that cannot be complete (None when it is)."""
    if source == "catalogue":
        return None
    have = ", ".join(catalogued()) or "none"
    if source == "default.ini":
        return (f"--config keys checked against CouchDB {version or '(unknown version)'}'s default.ini only: "
                f"dragnet has no catalogue of the settings its code reads (it has {have}), so the check is partial")
    return (f"--config keys not checked: dragnet has no catalogue of CouchDB {version or '(unknown version)'}'s "
            f"settings (it has {have}) and cannot read the default.ini of a CouchDB it does not manage")


def node_keys(couch: Couch) -> set[tuple[str, str]]:
    """(section, key) of every setting the node has now."""
    return {(sec, k) for sec, kv in couch.get("/_node/_local/_config").items() for k in kv}


def suggestion(setting: Setting, keys: set[tuple[str, str]]) -> str:
    """' did you mean view_updater/gc_interval_docs?' for the nearest known key, or ''."""
    keys = {(s, k) for s, k in keys if k != ANY}
    same = [k for s, k in keys if s == setting.section]
    near = difflib.get_close_matches(setting.key, same, n=1, cutoff=0.6)
    if near:
        return f"; did you mean {setting.section}/{near[0]}?"
    near = difflib.get_close_matches(setting.name, [f"{s}/{k}" for s, k in keys], n=1, cutoff=0.6)
    return f"; did you mean {near[0]}?" if near else ""


def check_known(settings: list[Setting], versions: dict[str, set[tuple[str, str]]]) -> dict[str, list[str]]:
    """Refuse a key no version knows (with the nearest known key); name -> versions lacking it (for those
    the setting is "not applicable"). versions: a version's label -> its known_keys()."""
    lacking: dict[str, list[str]] = {}
    for s in settings:
        missing = [v for v, keys in versions.items() if not knows(keys, s.section, s.key)]
        if len(missing) == len(versions):
            every = set().union(*versions.values()) if versions else set()
            raise UsageError(f"--config {s.name} is not a setting of CouchDB {', '.join(versions)}"
                             f"{suggestion(s, every)}")
        if missing:
            lacking[s.name] = missing
    return lacking


def not_applicable(setting: Setting, version: str, catalogued: bool = False) -> str:
    why = "neither its code nor its default.ini names it" if catalogued else "its default.ini has no such setting"
    return f"{setting.name} is not applicable to CouchDB {version} ({why})"


# ---------------------------------------------------------------- on a node

def _path(s: Setting, node: str = "_local") -> str:
    return f"/_node/{quote(node, safe='')}/_config/{quote(s.section, safe='')}/{quote(s.key, safe='')}"


def nodes(couch: Couch) -> list[str]:
    """Every node of the cluster the connection reaches (one for a single node)."""
    return sorted(couch.get("/_membership").get("cluster_nodes") or []) or ["_local"]


def read(couch: Couch, s: Setting, node: str = "_local") -> str | None:
    """The node's value, None when not set."""
    try:
        return couch.get(_path(s, node))
    except CouchError as exc:
        if exc.status == 404:
            return None
        raise


def put(couch: Couch, s: Setting, value: str | None, node: str = "_local") -> None:
    """Set (None: delete) the value; a refusal is a one-line DragnetError."""
    try:
        if value is None:
            couch.request("DELETE", _path(s, node), ok=(200, 404))
        else:
            couch.request("PUT", _path(s, node), json=value, ok=(200,))
    except CouchError as exc:
        why = " ".join(str(x) for x in (exc.status, exc.error, exc.reason) if x)
        if exc.status == 403 and "blacklisted" in str(exc.reason or ""):
            # CouchDB takes these sections (native_query_servers, query_servers, …) only from its ini files
            raise UsageError(f"--config {s.name}: CouchDB does not take it over HTTP ({why}); give it as "
                             f"--config-restart {s.name}=… (written into the ini, CouchDB restarted)") from None
        raise DragnetError(f"--config {s.label(value or '')}: CouchDB refused it ({why})") from None


class Applied:
    """What the bench changed on the node: the first value found per setting, to put back."""

    def __init__(self) -> None:
        self.original: dict[tuple[str, str], tuple[Setting, str | None]] = {}   # (node, name) -> its value

    def set(self, couch: Couch, s: Setting, value: str, node: str = "_local") -> None:
        before = read(couch, s, node)
        key = (node, s.name)
        first = key not in self.original
        # kept before the PUT: a Ctrl-C or SIGTERM between the node taking it and the next line would leave it set
        if first:
            self.original[key] = (s, before)
        try:
            put(couch, s, value, node)
        except DragnetError:               # refused: nothing changed, nothing to put back
            if first:
                del self.original[key]
            raise
        now = read(couch, s, node)
        if now != value:
            raise DragnetError(f"--config {s.label(value)}: the node reads back {now!r}")

    def forget(self) -> None:
        """The node was restarted with a fresh configuration: nothing of ours is left on it."""
        self.original.clear()

    def restore(self, couch: Couch) -> list[str]:
        """Put every original back; the names restored."""
        done = []
        for (node, name), (s, value) in list(self.original.items()):
            put(couch, s, value, node)
            done.append(name)
            del self.original[(node, name)]
        return done


def validate(couch: Couch, settings: list[Setting], skip: dict[str, list[str]] | None = None) -> None:
    """Before any build: set each value once and put the original back, so a value the node refuses is a
    one-line error now, not halfway through the bench."""
    applied = Applied()
    try:
        for s in settings:
            if s.restart:        # set only before a start: checked by reading it back after the restart
                continue
            for v in s.values:
                applied.set(couch, s, v)
    finally:
        applied.restore(couch)


def default_ini_of(inst, couchdb_value: str | None = None, env: dict | None = None) -> str | None:
    """The default.ini of the CouchDB a managed instance runs (local: its release; docker: read from the
    image); None when dragnet does not know (a server it does not manage)."""
    if inst is None:
        return None
    if inst.backend == "local":
        p = Path(couchdb_value or inst.home) / "etc" / "default.ini"
        return p.read_text() if p.is_file() else None
    from dragnet.axes.couchdb import image_file

    return image_file(couchdb_value or inst.image, "/opt/couchdb/etc/default.ini", env=env)


def check_restarted(couch: Couch, settings: dict[Setting, str]) -> None:
    """After a restart: the node runs with every --config-restart value, or a one-line DragnetError."""
    for s, value in settings.items():
        now = read(couch, s)
        if now != value:
            raise DragnetError(f"--config-restart {s.label(value)}: after the restart the node reads {now!r}")


def axis(s: Setting, backend: str | None):
    """A live setting: set on the node (put back through ctx.applied); a --config-restart one: a restart."""
    from dragnet.axes.model import CONTAINER, LIVE, RESTART, Axis

    name = f"config:{s.name}"
    if not s.restart:
        return Axis(name, list(s.values), how=LIVE, label=s.label,
                    apply=lambda v, ctx: ctx.applied.set(ctx.couch, s, v))
    return Axis(name, list(s.values), how=CONTAINER if backend == "docker" else RESTART, label=s.label,
                restart=lambda v, ctx: {"ini": {s.name: v}},
                running=lambda v, ctx: (getattr(ctx.inst, "ini", None) or {}).get(s.name) == v,
                check=lambda v, ctx: check_restarted(ctx.couch, {s: v}))


def default_install_ini(backend: str, env) -> dict[str, str]:
    """{install: its default.ini} for what a bench without --couchdb starts; {} when it cannot be read yet
    (dragnet's image not built, no release: starting says why)."""
    from dragnet.axes import couchdb as axis_couchdb
    from dragnet.errors import DragnetError

    try:
        if backend == "docker":
            from dragnet.couchdb.docker import DEFAULT_IMAGE

            text = axis_couchdb.image_file(DEFAULT_IMAGE, axis_couchdb.IMAGE_DEFAULT_INI, env=env)
            return {} if text is None else {DEFAULT_IMAGE: text}
        from dragnet.couchdb.local import find_release
        from dragnet.servers.discovery import couchdb_home

        release = find_release(couchdb_home(env))
        return {str(release.home): release.default_ini.read_text()}
    except (DragnetError, OSError):
        return {}


def check_start(settings: list[Setting], backend: str, env, found: dict) -> None:
    """Before a bench starts its own CouchDB: the keys against what that install knows (its version's
    catalogue, its default.ini: each --couchdb value's, or the default install's), so a misspelt key costs
    no start."""
    from dragnet.axes import couchdb as axis_couchdb

    inis = found.get("couchdb") or default_install_ini(backend, env)
    known = {v: keys_of(axis_couchdb.version_of(v, backend, env), text)[0] for v, text in inis.items()}
    if known:
        check_known(settings, known)


def up_front(settings: list[Setting], ctx, couch: Couch) -> None:
    """Before any build: the keys against what each CouchDB knows (with --couchdb, each install's version
    catalogue and default.ini, kept in ctx.installs by its up_front; else this node's version, default.ini and
    the settings it has), then each value set once on the node and put back (a value it refuses: refused
    now)."""
    from dragnet.axes import couchdb as axis_couchdb

    backend = ctx.inst.backend if ctx.inst is not None else None
    for v, text in ctx.installs.items():
        version = axis_couchdb.version_of(v, backend, ctx.env)
        ctx.known[v], ctx.key_sources[v] = keys_of(version, text)
        ctx.warn(partial_warning(version, ctx.key_sources[v]))
    if not ctx.opts.get("couchdb"):
        version = couch.get("/").get("version")
        keys, source = keys_of(version, default_ini_of(ctx.inst, env=ctx.env))
        ctx.warn(partial_warning(version, source))
        if source:        # what the node has set counts too (local.ini, earlier PUTs)
            ctx.known[version or "this"] = keys | node_keys(couch)
            ctx.key_sources[version or "this"] = source
    if ctx.known:
        ctx.lacking = check_known(settings, ctx.known)
    validate(couch, settings)


def not_applicable_run(settings: list[Setting], run_axes: dict, ctx) -> str | None:
    """A setting the run's CouchDB (--couchdb) lacks: the run is not applicable, the bench goes on."""
    from dragnet.axes.couchdb import label

    cdb = run_axes.get("couchdb")
    for s in settings:
        if f"config:{s.name}" in run_axes and cdb is not None and cdb in ctx.lacking.get(s.name, []):
            return not_applicable(s, label(cdb), catalogued=ctx.key_sources.get(cdb) == "catalogue")
    return None


def value_label(axes: dict) -> str:
    """'view_updater/gc_interval_docs=1000' from a run's axes (the contract's `config` axis)."""
    return ",".join(f"{k[len('config:'):]}={v}" for k, v in axes.items() if k.startswith("config:"))


def settings_of(label: str | None) -> dict[str, str]:
    """{"view_updater/gc_interval_docs": "1000", …} from a recorded "config" axis (value_label's inverse)."""
    out = {}
    for part in str(label or "").split(","):
        name, eq, value = part.partition("=")
        if eq:
            out[name] = value
    return out


def recorded(run_axes: dict) -> dict:
    """A run's axes as bench.axes records them: the settings joined under "config"."""
    out = {k: v for k, v in run_axes.items() if not k.startswith("config:")}
    cfg = value_label(run_axes)
    if cfg:
        out["config"] = cfg
    return out


def _kind():
    from dragnet.axes.model import AxisKind, Option

    return AxisKind(
        "config",
        (Option(("--config",), "configs", "SECTION/KEY=V1,V2",
                "Axis, repeatable: a CouchDB setting set through /_node/_local/_config, e.g. "
                "view_updater/gc_interval_docs=1,1000,infinity; put back afterwards.", multiple=True),
         Option(("--config-restart",), "restart_configs", "SECTION/KEY=V1,V2",
                "Axis, repeatable: a setting CouchDB takes only when it starts (local backend): written into "
                "its ini and CouchDB restarted per value; the ini it had is restored afterwards.", multiple=True)),
        parse=lambda raw: parse_all(list(raw.get("configs") or ()), list(raw.get("restart_configs") or ())),
        make=lambda settings, backend: [axis(s, backend) for s in settings], restored_as="config_restored",
        check_start=check_start, up_front=up_front, not_applicable=not_applicable_run, recorded=recorded)


KIND = _kind()
