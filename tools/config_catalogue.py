"""Regenerate dragnet's catalogue of the settings a CouchDB version's code reads.

    python tools/config_catalogue.py /path/to/apache-couchdb-clone 3.5.0 3.5.2 ...

For each release tag it reads the Erlang sources under src/ at that tag (`git archive`, tests left out),
finds every `config:get*` call (and chttpd_util's wrappers, which read [chttpd]/[chttpd_auth] with a
fallback to the older section) whose section and key are string literals or macros defined as one
(`-define(SECTION, "disk_monitor").`), adds every setting the tag's rel/overlay/etc/default.ini names (set
or commented out), and writes dragnet/axes/catalogue/couchdb-<tag>.json: each setting's section, key,
default (as written in the code), where it is read and whether default.ini names it. A section read whole
(`config:get("admins")`) or with a computed key is recorded under "open_sections": any key of it counts as
known. dragnet.axes.config reads these files.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "dragnet" / "axes" / "catalogue"
DEFAULT_INI = "rel/overlay/etc/default.ini"
# function -> (section, fallback section) for the wrappers that name no section themselves
WRAPPERS = {
    "chttpd_util:get_chttpd_config": ("chttpd", "httpd"),
    "chttpd_util:get_chttpd_config_integer": ("chttpd", "httpd"),
    "chttpd_util:get_chttpd_config_boolean": ("chttpd", "httpd"),
    "chttpd_util:get_chttpd_auth_config": ("chttpd_auth", "couch_httpd_auth"),
    "chttpd_util:get_chttpd_auth_config_integer": ("chttpd_auth", "couch_httpd_auth"),
    "chttpd_util:get_chttpd_auth_config_boolean": ("chttpd_auth", "couch_httpd_auth"),
}
WRAPPER_MODULE = "src/chttpd/src/chttpd_util.erl"
WRAPPED = {s for pair in WRAPPERS.values() for s in pair}
CALL = re.compile(r"\b(config:get(?:_[a-z_]+)?|"
                  + "|".join(re.escape(w) for w in WRAPPERS) + r")\s*\(")
STRING = re.compile(r'^"((?:[^"\\]|\\.)*)"$')
DEFINE = re.compile(r'-define\(\s*([A-Za-z_]\w*)\s*,\s*("(?:[^"\\]|\\.)*")\s*\)\s*\.')
MACRO = re.compile(r"^\?([A-Za-z_]\w*)$")


def _args(text: str, start: int) -> list[str] | None:
    """The top-level arguments of the call whose '(' is at start, as source text; None if unbalanced."""
    depth, args, cur, i, quote = 0, [], [], start, None
    while i < len(text):
        ch = text[i]
        if quote:
            cur.append(ch)
            if ch == "\\":
                cur.append(text[i + 1])
                i += 1
            elif ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
            cur.append(ch)
        elif ch == "%":                       # an Erlang comment runs to the end of the line
            while i < len(text) and text[i] != "\n":
                i += 1
            continue
        elif ch in "([{":
            depth += 1
            if depth > 1:
                cur.append(ch)
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                args.append("".join(cur).strip())
                return [a for a in args if a] if args != [""] else []
            cur.append(ch)
        elif ch == "," and depth == 1:
            args.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
        i += 1
    return None


def _literal(arg: str, macros: dict[str, str] | None = None) -> str | None:
    """A string literal's value, or a macro's that is defined as one; None for anything computed."""
    arg = " ".join(arg.split())
    m = MACRO.match(arg)
    if m and macros and m.group(1) in macros:
        arg = macros[m.group(1)]
    m = STRING.match(arg)
    return m.group(1) if m else None


def _macros(files: dict[str, str]) -> dict[str, dict[str, str]]:
    """Per file, the string macros it can use: its own, then those of every .hrl that defines one only once."""
    shared: dict[str, set[str]] = {}
    for path, text in files.items():
        if path.endswith(".hrl"):
            for name, value in DEFINE.findall(text):
                shared.setdefault(name, set()).add(value)
    common = {n: next(iter(v)) for n, v in shared.items() if len(v) == 1}
    return {path: {**common, **dict(DEFINE.findall(text))} for path, text in files.items()}


def scan(files: dict[str, str], default_ini: str | None = None) -> dict:
    """{settings: [{section, key, default, read_by: [path:line], default_ini}], open_sections: {section:
    [path:line]}}; default_ini: the release's default.ini, whose settings are added."""
    settings: dict[tuple[str, str], dict] = {}
    open_sections: dict[str, list[str]] = {}
    macros = _macros(files)
    for path, text in sorted(files.items()):
        for m in CALL.finditer(text):
            args = _args(text, m.end() - 1)
            if not args:
                continue
            where = f"{path}:{text.count(chr(10), 0, m.start()) + 1}"
            fn = m.group(1)
            if fn in WRAPPERS:
                sections = WRAPPERS[fn]
                key, default = _literal(args[0], macros[path]), args[1] if len(args) > 1 else None
            else:
                sections = (_literal(args[0], macros[path]),)
                key = _literal(args[1], macros[path]) if len(args) > 1 else None
                default = args[2] if len(args) > 2 else None
                if sections[0] is None:
                    continue               # a computed section: nothing to name
                if key is None and path.endswith(WRAPPER_MODULE) and sections[0] in WRAPPED:
                    continue               # the wrappers' own bodies: their callers are counted instead
                if key is None:            # the whole section, or a computed key: any key of it
                    open_sections.setdefault(sections[0], []).append(where)
                    continue
            if key is None:
                continue
            for section in sections:
                e = settings.setdefault((section, key), {"section": section, "key": key, "default": None,
                                                         "read_by": [], "default_ini": False})
                if e["default"] is None and default is not None:
                    lit = _literal(default)      # a string as its value; anything else as written
                    e["default"] = lit if lit is not None else " ".join(default.split())
                e["read_by"].append(where)
    if default_ini is not None:
        sys.path.insert(0, str(ROOT))
        from dragnet.axes.config import known_keys

        for section, key in known_keys(default_ini):
            settings.setdefault((section, key), {"section": section, "key": key, "default": None,
                                                 "read_by": [], "default_ini": True})["default_ini"] = True
    return {"settings": [settings[k] for k in sorted(settings)],
            "open_sections": {s: open_sections[s] for s in sorted(open_sections)}}


def sources(repo: str, tag: str) -> dict[str, str]:
    """The .erl and .hrl files under src/ at tag, tests left out."""
    blob = subprocess.run(["git", "-C", repo, "archive", "--format=tar", tag, "src"], check=True,
                          capture_output=True).stdout
    out = {}
    with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
        for member in tar:
            name = member.name
            if not member.isfile() or not name.endswith((".erl", ".hrl")) or "/test/" in name:
                continue
            out[name] = tar.extractfile(member).read().decode("utf-8", errors="replace")
    return out


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    repo, tags = argv[0], argv[1:]
    OUT.mkdir(parents=True, exist_ok=True)
    for tag in tags:
        commit = subprocess.run(["git", "-C", repo, "rev-parse", f"{tag}^{{commit}}"], check=True,
                                capture_output=True, text=True).stdout.strip()
        ini = subprocess.run(["git", "-C", repo, "show", f"{tag}:{DEFAULT_INI}"], check=True, capture_output=True,
                             text=True).stdout
        cat = scan(sources(repo, tag), ini)
        doc = {"couchdb": tag, "source": "apache/couchdb", "commit": commit,
               "generated_by": "tools/config_catalogue.py", **cat}
        path = OUT / f"couchdb-{tag}.json"
        path.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n")
        print(f"{path}: {len(cat['settings'])} settings, {len(cat['open_sections'])} open sections")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
