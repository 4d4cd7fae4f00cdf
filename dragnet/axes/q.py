"""The `--q 2,8,16` bench axis: shards. Each value has its own database, <db>-q<N>, filled once from the
same data file (dragnet.bench.run.ensure_data keeps it across rounds and benches) and checked to have N shards."""

from __future__ import annotations

from dragnet.errors import DragnetError, UsageError


def parse(text: str | None) -> list[str]:
    """'2,8' -> ['2','8']; each a whole number ≥ 1."""
    from dragnet.bench.run import parse_list

    out = parse_list(text, "--q")
    for v in out:
        if not v.isdigit() or int(v) < 1:
            raise UsageError(f"--q {v}: a whole number of shards, at least 1")
    return out


def db_name(db: str, value: str) -> str:
    return f"{db}-q{value}"


def check(value: str, cluster: dict) -> None:
    """cluster: dragnet.bench.run.cluster_of()'s answer for the value's database."""
    if str(cluster.get("q")) != str(value):
        raise DragnetError(f"--q {value}: the database has q={cluster.get('q')}")
