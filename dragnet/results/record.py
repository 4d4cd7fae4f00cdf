"""One build as every reader sees it: the typed record of a build's figures and the names it is reported under.

Rules (also in the README):
- A result's *label* is the bench language name (javascript, javascript_quickjs_es2015, erlang_baseline …)
  recorded by `dragnet bench`; for a result made elsewhere it is derived from the view (language, plus
  `_es2015` for an ES2015 source and `erlang_baseline` for the baseline map).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from dragnet.results import schema as rs

BASELINE_LABEL = "erlang_baseline"


def result_label(result: dict) -> str:
    """The language name a result is reported under (see module docstring)."""
    bench = result.get("bench") or {}
    if bench.get("language"):
        return str(bench["language"])
    if result.get("label"):
        return str(result["label"])
    view = result.get("view") or {}
    lang = str(view.get("language") or rs.Summary.of(result).language or "unknown")
    path = str(view.get("path") or "").lower()
    name = Path(path).name
    if lang == "erlang" and "baseline" in path:
        return BASELINE_LABEL
    if lang.startswith("javascript") and ("es6" in name or "es2015" in name):
        return lang if lang.endswith("_es2015") else f"{lang}_es2015"
    return lang


def started_at(result: dict) -> float:
    """Unix seconds of the build's start (results may carry a number or an ISO 8601 string)."""
    v = result.get("started_at")
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        try:
            return datetime.fromisoformat(v.replace("Z", "+00:00")).timestamp()
        except ValueError:
            pass
    polls = result.get("polls") or []
    if polls and isinstance(polls[0], dict) and "t" in polls[0]:
        return float(polls[0]["t"])
    return 0.0


def scenario_label(result: dict) -> str | None:
    """The scenario a results file's build ran in, or None."""
    sc = result.get("scenario")
    return (result.get("bench") or {}).get("scenario") or (sc.get("label") if isinstance(sc, dict) else None) \
        or None
