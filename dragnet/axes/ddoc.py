"""The design-doc revision axis: `bench --ddoc A --ddoc B` builds each revision in every round and labels
each build with its revision (`bench.axes.ddoc`), so `report --by ddoc` compares them."""

from __future__ import annotations

import re
from pathlib import PurePath

from dragnet.errors import UsageError

_LABELLED = re.compile(r"^([A-Za-z0-9_.-]+)=(.+)$")


def default_label(source: str) -> str:
    """git:REF:path -> REF; a file, folder or URL -> its last path part."""
    if source.startswith("git:") and source.count(":") >= 2:
        return source.split(":", 2)[1]
    return PurePath(source.rstrip("/")).name or source


def revision_labels(sources: tuple[str, ...] | list[str]) -> dict[str, str]:
    """label -> source, in the order given; `LABEL=SOURCE` names a revision, else default_label."""
    out: dict[str, str] = {}
    for text in sources:
        m = _LABELLED.match(text)
        label, source = (m.group(1), m.group(2)) if m and "/" not in m.group(1) else (default_label(text), text)
        if label in out:
            raise UsageError(f"--ddoc {text}: revision label {label!r} given twice; name each with "
                             f"--ddoc LABEL=SOURCE")
        out[label] = source
    return out


def axis(labels: list[str]):
    """A label axis: the bench builds each revision's design doc itself (its copy per run)."""
    from dragnet.axes.model import Axis

    return Axis("ddoc", labels, label=lambda v: f"ddoc-{v}")


def _kind():
    from dragnet.axes.model import AxisKind

    # no option of its own: several --ddoc are its values (label -> the revision's Design)
    return AxisKind("ddoc", (), parse=lambda raw: {}, make=lambda designs, backend: [axis(list(designs))],
                    designs=True)


KIND = _kind()
