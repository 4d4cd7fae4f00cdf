"""The `--q 2,8,16` bench axis: shards. Each value has its own database, <db>-q<N>, filled once from the
same data file (dragnet.data.ensure.ensure_data keeps it across rounds and benches) and checked to have N shards."""

from __future__ import annotations

from dragnet.errors import DragnetError, UsageError


def parse(text: str | None) -> list[str]:
    """'2,8' -> ['2','8']; each a whole number ≥ 1."""
    from dragnet.axes.model import parse_list

    out = parse_list(text, "--q")
    for v in out:
        if not v.isdigit() or int(v) < 1:
            raise UsageError(f"--q {v}: a whole number of shards, at least 1")
    return out


def db_name(db: str, value: str) -> str:
    return f"{db}-q{value}"


def check(value: str, cluster: dict) -> None:
    """cluster: dragnet.couchdb.cluster.cluster_of()'s answer for the value's database."""
    if str(cluster.get("q")) != str(value):
        raise DragnetError(f"--q {value}: the database has q={cluster.get('q')}")


def apply(value: str, ctx) -> None:
    """Build on the value's database, filled from the data once (kept across rounds and benches)."""
    from dragnet.data.ensure import ensure_data

    ctx.build_db = db_name(ctx.db, value)
    ensure_data(ctx.couch, ctx.build_db, ctx.data, q=int(value), n=ctx.n,
                progress=lambda m: ctx.on_event("import", {"message": m}))


def axis(values: list[str]):
    from dragnet.axes.model import REFILL, Axis
    from dragnet.couchdb.cluster import cluster_of

    return Axis("q", values, how=REFILL, label=lambda v: f"q{v}", apply=apply,
                check=lambda v, ctx: check(v, cluster_of(ctx.couch, ctx.build_db)))


def _kind():
    from dragnet.axes.model import AxisKind, Option

    return AxisKind("q", (Option(("--q",), "q_text", "N[,N...]",
                                 "Shards when creating the database; several (2,8,16) are an axis: one database "
                                 "<db>-q<N> per value, filled once from --data."),),
                    # one value is the database's shards, not an axis
                    parse=lambda raw: (lambda v: v if len(v) > 1 else [])(parse(raw.get("q_text"))),
                    make=lambda v, backend: [axis(v)])


KIND = _kind()
