"""What one design document revision changes against another, as the view index sees it (pure).

The gate counts the map functions' instructions; anything else a revision changes is work the count may
not see (CouchDB's side: reduces it runs or writes, options, views added or dropped, another language,
libraries), so the gate judges such a revision on CPU too. `_id` and `_rev` name the document, they change
nothing CouchDB builds: a revision that differs only there is no change.
"""

from __future__ import annotations

from dataclasses import dataclass, field

NAMING = ("_id", "_rev")


@dataclass(frozen=True)
class Changes:
    """`maps`: views whose map function differs (or is new); `outside`: everything else that differs, in
    words (empty when only the maps did)."""

    maps: tuple[str, ...] = ()
    outside: tuple[str, ...] = field(default=())

    @property
    def none(self) -> bool:
        return not self.maps and not self.outside

    @property
    def maps_only(self) -> bool:
        return not self.outside

    def text(self) -> str:
        if self.none:
            return "no change (only _id or _rev differ)"
        parts = [f"map of {', '.join(self.maps)}"] if self.maps else []
        return "; ".join(parts + list(self.outside))


def _views(doc: dict) -> dict[str, dict]:
    views = doc.get("views") if isinstance(doc.get("views"), dict) else {}
    return {k: v for k, v in views.items() if k != "lib" and isinstance(v, dict)}


def changes(old: dict, new: dict) -> Changes:
    """Map functions changed, and what else changed (reduces, options, views, language, libraries, other
    fields), between two design documents."""
    a, b = _views(old), _views(new)
    maps, outside = [], []
    for name in sorted(set(a) & set(b)):
        if a[name].get("map") != b[name].get("map"):
            maps.append(name)
        if a[name].get("reduce") != b[name].get("reduce"):
            what = "added" if not a[name].get("reduce") else "removed" if not b[name].get("reduce") else "changed"
            outside.append(f"reduce of {name} {what}")
        rest = lambda v: {k: x for k, x in v.items() if k not in ("map", "reduce")}  # noqa: E731
        if rest(a[name]) != rest(b[name]):
            outside.append(f"options of view {name}")
    added, dropped = sorted(set(b) - set(a)), sorted(set(a) - set(b))
    if added:
        outside.append(f"views added: {', '.join(added)}")
    if dropped:
        outside.append(f"views dropped: {', '.join(dropped)}")
    if (old.get("language") or "javascript") != (new.get("language") or "javascript"):
        outside.append(f"language {old.get('language') or 'javascript'} → {new.get('language') or 'javascript'}")
    lib = lambda d: (d.get("views") or {}).get("lib") if isinstance(d.get("views"), dict) else None  # noqa: E731
    if lib(old) != lib(new):
        outside.append("views.lib")
    for key in sorted((set(old) | set(new)) - {"views", "language", *NAMING}):
        if old.get(key) != new.get(key):
            outside.append("options" if key == "options" else key)
    return Changes(tuple(maps), tuple(outside))
