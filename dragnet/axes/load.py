"""The `--load` bench axis: the application's traffic beside each build (`--load none,writes=200/s`).

Nothing is applied before a run: the value is an application load (dragnet.load) that the build starts in
the window before it and stops when it ends. Its values are interleaved in every round like the other axes,
so an idle and a loaded build of the same engine are a few minutes apart and their ratio is a within-round
one (dragnet.report.load). A value is a whole load: `none`, or KIND=RATE,… (kinds in dragnet.load.spec).
"""

from __future__ import annotations

from dragnet.load import spec as S

BEFORE_S = 5.0      # the load alone before each loaded build: the latency without a build to compare with


def parse(raw: str | tuple | list | None) -> list[str]:
    if not raw:
        return []
    return S.parse_values(raw)


def beside(value: str, ctx) -> object | None:
    """The load to run beside a build of this value (None for `none`)."""
    load = S.parse(value)
    if load.idle:
        return None
    from dragnet.load.beside import Beside

    return Beside(load, before_s=BEFORE_S, on_note=lambda m: ctx.on_event("warning", {"message": m}))


def refuse_view_reads(values: list[str], why: str) -> None:
    """A load that queries the view, on builds with no view to query: refused before anything runs."""
    from dragnet.errors import UsageError

    for v in values:
        kinds = [k for k, _ in S.parse(v).rates if k in S.VIEW_KINDS]
        if kinds:
            raise UsageError(f"--load {v}: {', '.join(kinds)} on builds with no view ({why})")


def check_once(ctx) -> None:
    from dragnet.load.generator import require_loopback

    require_loopback(ctx.url)


def axis(values: list[str]):
    from dragnet.axes.model import BESIDE, Axis

    return Axis("load", values, how=BESIDE, label=lambda v: f"load-{v}", beside=beside, check_once=check_once)


def _kind():
    from dragnet.axes.model import AxisKind, Option

    return AxisKind("load", (Option(("--load",), "load_text", "LOAD[;LOAD]",
                                    "Axis: the application's traffic beside each build, e.g. "
                                    "'none,writes=200/s,updates=50/s,reads=100/s,view-reads=20/s' (none, and "
                                    "one load of four kinds; kinds: writes, updates, reads, view-reads, "
                                    "view-waits; rates N/s or N/min).", multiple=True),),
                    parse=lambda raw: parse(raw.get("load_text")), make=lambda v, backend: [axis(v)])


KIND = _kind()
