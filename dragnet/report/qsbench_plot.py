"""The qsbench chart: docs/s per query server (median bar, min … max whiskers), PNG via matplotlib's Agg."""

from __future__ import annotations

from pathlib import Path

from dragnet.extras import require

matplotlib = require("matplotlib", "drawing charts")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def bars(doc: dict) -> list[tuple[str, float, float, float]]:
    """(name, median, min, max) docs/s of every server that finished correctly, fastest first."""
    out = []
    for s in doc["servers"]:
        if s.get("status") == "ok" and s.get("docs_per_sec"):
            rate = s["rate"]
            out.append((s["name"], s["docs_per_sec"], rate["min"], rate["max"]))
    return sorted(out, key=lambda b: b[1], reverse=True)


def plot(doc: dict, path: str | Path) -> Path:
    """Draw a results document (dragnet.qsbench/1) to `path`; returns the path."""
    data = bars(doc)
    if not data:
        raise ValueError("no server finished correctly: nothing to plot")
    path = Path(path)
    names = [b[0] for b in data]
    med = [b[1] for b in data]
    err = [[m - lo for _, m, lo, _ in data], [hi - m for _, m, _, hi in data]]
    fig, ax = plt.subplots(figsize=(8, 1.2 + 0.55 * len(data)))
    y = range(len(data))
    ax.barh(y, med, xerr=err, capsize=4, color="#4c72b0")
    ax.set_yticks(list(y), names)
    ax.invert_yaxis()
    for i, (_, m, _, hi) in enumerate(data):  # label right of the whisker, with the slowdown factor
        ax.text(hi, i, f"  {m:,.0f}" + (f"  (×{med[0] / m:.2f} slower)" if i else "  (fastest)"),
                va="center", ha="left", fontsize=9)
    ax.set_xlim(0, max(b[3] for b in data) * 1.4)
    docs = doc.get("docs", {})
    settings = doc.get("settings", {})
    ax.set_xlabel("documents per second (median; whiskers: min … max)")
    ax.set_title(f"view {doc.get('view', {}).get('name', '?')}: {docs.get('count', '?')} docs, "
                 f"{settings.get('shards', 1)} shard(s), {settings.get('repeat', '?')} runs "
                 f"[{doc.get('machine', {}).get('cpu_model', '')}]", fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
