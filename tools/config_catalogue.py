"""Regenerate dragnet's catalogue of the settings a CouchDB version's code reads.

    python tools/config_catalogue.py /path/to/apache-couchdb-clone 3.5.0 3.5.2 ...

For each release tag it reads the Erlang sources under src/ at that tag (`git archive`, tests left out),
finds every `config:get*` call (and chttpd_util's wrappers, which read [chttpd]/[chttpd_auth] with a
fallback to the older section) whose section and key are string literals, and writes
dragnet/axes/catalogue/couchdb-<tag>.json: each setting's section, key, default (as written in the code)
and where it is read. A section read whole (`config:get("admins")`) or with a computed key is recorded
under "open_sections": any key of it counts as known. dragnet.axes.config reads these files.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import tarfile
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "dragnet" / "axes" / "catalogue"
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
CALL = re.compile(r"\b(config:get(?:_[a-z_]+)?|"
                  + "|".join(re.escape(w) for w in WRAPPERS) + r")\s*\(")
STRING = re.compile(r'^"((?:[^"\\]|\\.)*)"$')


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


def _literal(arg: str) -> str | None:
    m = STRING.match(" ".join(arg.split()))
    return m.group(1) if m else None


def scan(files: dict[str, str]) -> dict:
    """{settings: [{section, key, default, read_by: [path:line]}], open_sections: {section: [path:line]}}."""
    settings: dict[tuple[str, str], dict] = {}
    open_sections: dict[str, list[str]] = {}
    for path, text in sorted(files.items()):
        for m in CALL.finditer(text):
            args = _args(text, m.end() - 1)
            if not args:
                continue
            where = f"{path}:{text.count(chr(10), 0, m.start()) + 1}"
            fn = m.group(1)
            if fn in WRAPPERS:
                sections, key, default = WRAPPERS[fn], _literal(args[0]), args[1] if len(args) > 1 else None
            else:
                sections = (_literal(args[0]),)
                key = _literal(args[1]) if len(args) > 1 else None
                default = args[2] if len(args) > 2 else None
                if sections[0] is None:
                    continue               # a computed section: nothing to name
                if key is None and path.endswith(WRAPPER_MODULE):
                    continue               # the wrappers' own bodies: their callers are counted instead
                if key is None:            # the whole section, or a computed key: any key of it
                    open_sections.setdefault(sections[0], []).append(where)
                    continue
            if key is None:
                continue
            for section in sections:
                e = settings.setdefault((section, key), {"section": section, "key": key, "default": None,
                                                         "read_by": []})
                if e["default"] is None and default is not None:
                    lit = _literal(default)      # a string as its value; anything else as written
                    e["default"] = lit if lit is not None else " ".join(default.split())
                e["read_by"].append(where)
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
        cat = scan(sources(repo, tag))
        doc = {"couchdb": tag, "source": "apache/couchdb", "commit": commit,
               "generated_by": "tools/config_catalogue.py", **cat}
        path = OUT / f"couchdb-{tag}.json"
        path.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n")
        print(f"{path}: {len(cat['settings'])} settings, {len(cat['open_sections'])} open sections")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
