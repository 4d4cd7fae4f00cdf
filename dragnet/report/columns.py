"""The columns of the report's main tables, declared once beside their records (tables.Group, tables.DesignGroup,
share.EngineShare): the console, Markdown, CSV and HTML renderers iterate these tuples, JSON emits the records'
fields. A new figure is one field on its record plus one Column here.

Each Column is one column of the table a person reads: its header, its cell as text, the number behind the cell
(the HTML page sorts and links by it; None: a text cell), and the CSV fields it stands for (none, one or several:
CSV keeps the parts a text cell joins, such as a minimum and a maximum). A column with no header is CSV only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from dragnet.measure.stats import Summary

Getter = Callable[[Any], Any]


@dataclass(frozen=True)
class Column:
    header: str | None                            # None: in the CSV only
    text: Getter | None = None                    # row -> its cell as text
    value: Getter | None = None                   # row -> the number behind the cell (None: a text cell)
    csv: tuple[tuple[str, Getter], ...] = ()      # (CSV field, row -> value) for each field it stands for
    left: bool = False                            # console: left-justified (labels, words)
    no_wrap: bool = False                         # console: never wrapped
    in_table: Callable[[Any, Sequence[Any]], str] | None = None   # row, every row -> text, where a cell needs them
    line: Getter | None = None                    # a console line's piece (the engine share prints lines)
    sep: str = "  "                               # what comes before `line` in that line
    link: Getter | None = None                    # the HTML page: row -> {"href", "title"} its cell adds (or None)

    def cell(self, row: Any, rows: Sequence[Any]) -> str:
        return self.in_table(row, rows) if self.in_table else self.text(row)

    def number(self, row: Any) -> Any:
        return None if self.value is None else self.value(row)


def headers(columns: Sequence[Column]) -> tuple[str, ...]:
    return tuple(c.header for c in columns if c.header is not None)


def text_rows(columns: Sequence[Column], rows: Sequence[Any]) -> list[list[str]]:
    """Each row's cells as text, column for column (the console, Markdown and the HTML page)."""
    shown = [c for c in columns if c.header is not None]
    return [[c.cell(r, rows) for c in shown] for r in rows]


def value_rows(columns: Sequence[Column], rows: Sequence[Any]) -> list[list[Any]]:
    """The numbers behind text_rows' cells (None for a text cell): what the HTML page links and sorts by."""
    shown = [c for c in columns if c.header is not None]
    return [[c.number(r) for c in shown] for r in rows]


def csv_fields(columns: Sequence[Column]) -> tuple[str, ...]:
    return tuple(name for c in columns for name, _ in c.csv)


def csv_values(columns: Sequence[Column], row: Any) -> list[Any]:
    return [get(row) for c in columns for _, get in c.csv]


# ---------------------------------------------------------------- cells

def num(v: float | None, digits: int = 1) -> str:
    return "–" if v is None else f"{v:,.{digits}f}"


def med(s: Summary | None) -> float | None:
    return s.median if s else None


def _m(attr: str, digits: int = 1) -> Getter:
    return lambda g: num(med(getattr(g, attr)), digits)


def _medv(attr: str) -> Getter:
    return lambda g: med(getattr(g, attr))


def _plain(attr: str, digits: int = 1) -> Getter:
    return lambda g: num(getattr(g, attr), digits)


def _get(attr: str) -> Getter:
    return lambda g: getattr(g, attr)


def _spread(g) -> bool:
    return g.wall_s is not None and g.wall_s.n >= 2     # a single run has no measured spread


def _runs(g) -> str:
    return str(g.n) + (f" ({g.failed} failed)" if g.failed else "")


def _qs(g) -> str:
    return g.qs_family or ("(in beam)" if g.n else "–")


def _of(attr: str, part: str) -> Getter:
    return lambda g: getattr(getattr(g, attr), part) if getattr(g, attr) else None


def classes_text(classes: dict[str, int]) -> str:
    """'2 order-dependent reduce, 1 engine' (what the differences column adds to the count)."""
    return ", ".join(f"{n:,} {c}" for c, n in sorted(classes.items(), key=lambda kv: -kv[1]) if n)


# ---------------------------------------------------------------- view files: tables.Group
#
# all-tasks / one-task c/s, total and wall time are medians over the runs; σ and min…max are of wall time;
# × base: docs/s relative to the Erlang baseline; CPU % is of one core over the build's interval, from the
# kernel's accounting (beam.smp's utime+stime, the query servers' schedstat); MB the peak RSS of the family

def _resources(qs_no_wrap: bool) -> tuple[Column, ...]:
    """The resource columns both tables end with (a Nouveau row's CPU % is its build's own split)."""
    return (
        Column("beam CPU %", _plain("beam_cpu"), _get("beam_cpu"), (("beam_cpu_mean_pct", _get("beam_cpu")),)),
        Column("beam MB", _plain("beam_rss_mb", 0), _get("beam_rss_mb"),
               (("beam_rss_peak_mb", _get("beam_rss_mb")),)),
        Column("QS", _qs, None, (("qs_family", _get("qs_family")),), left=True, no_wrap=qs_no_wrap),
        Column("QS CPU %", _plain("qs_cpu"), _get("qs_cpu"), (("qs_cpu_mean_pct", _get("qs_cpu")),)),
        Column("QS MB", _plain("qs_rss_mb", 0), _get("qs_rss_mb"), (("qs_rss_peak_mb", _get("qs_rss_mb")),)),
    )


GROUP = (
    Column("language", _get("label"), None, (("language", _get("label")),), left=True, no_wrap=True),
    Column("storage", _get("storage"), None, (("storage", _get("storage")),), left=True),
    Column("runs", _runs, _get("n"), (("runs", _get("n")), ("failed", _get("failed")))),
    Column("all c/s", _m("all_cps"), _medv("all_cps"), (("all_tasks_cps_median", _medv("all_cps")),)),
    Column("one c/s", _m("one_cps"), _medv("one_cps"), (("one_task_cps_median", _medv("one_cps")),)),
    Column("total s", _m("total_s"), _medv("total_s"), (("total_time_s_median", _medv("total_s")),)),
    Column("wall s", _m("wall_s", 2), _medv("wall_s"), (("wall_time_s_median", _medv("wall_s")),)),
    Column("wall σ", lambda g: f"{g.wall_s.stdev:.2f}" if _spread(g) else "–",
           lambda g: g.wall_s.stdev if _spread(g) else None, (("wall_time_s_stdev", _of("wall_s", "stdev")),)),
    Column("wall min…max", lambda g: f"{g.wall_s.min:.2f}…{g.wall_s.max:.2f}" if _spread(g) else "–",
           lambda g: g.wall_s.min if _spread(g) else None,
           (("wall_time_s_min", _of("wall_s", "min")), ("wall_time_s_max", _of("wall_s", "max"))), no_wrap=True),
    Column("docs/s", _m("docs_per_s"), _medv("docs_per_s"), (("docs_per_sec_wall_median", _medv("docs_per_s")),)),
    Column("× base", lambda g: "–" if g.ratio is None else f"{g.ratio.median:.2f}", _medv("ratio"),
           (("ratio_to_baseline_median", _medv("ratio")), ("ratio_min", _of("ratio", "min")),
            ("ratio_max", _of("ratio", "max")))),
) + _resources(qs_no_wrap=True)


# ---------------------------------------------------------------- design documents: tables.DesignGroup

def _differences(g, groups: Sequence) -> str:
    # views whose rows were compared at all (addview --per-view builds compare nothing)
    compared_views = {(x.ddoc, x.view) for x in groups if x.compared}
    if g.is_reference and not g.compared and (g.ddoc, g.view) in compared_views:
        diffs = "(reference)"
    elif g.differences is None:
        diffs = "not compared"
    else:
        diffs = f"{g.differences:,}" + (" (reference repeats)" if g.is_reference else "")
    if g.repeat_differences:
        diffs += f" + {g.repeat_differences:,} between its own builds"
    if g.classes:
        diffs += f": {classes_text(g.classes)}"
    return diffs


DESIGN = (
    Column("design doc", _get("ddoc"), None, (("design_doc", _get("ddoc")),), left=True, no_wrap=True),
    Column("view", _get("view"), None, (("view", _get("view")),), left=True, no_wrap=True),
    Column("engine", lambda g: g.label + (" *" if g.is_reference else ""), None, (("engine", _get("label")),),
           left=True, no_wrap=True),
    Column("storage", _get("storage"), None, (("storage", _get("storage")),), left=True),
    Column(None, csv=(("is_reference", lambda g: str(g.is_reference).lower()), ("reference", _get("reference")))),
    Column("runs", _runs, _get("n"), (("runs", _get("n")), ("failed", _get("failed")))),
    Column("total s", _m("total_s"), _medv("total_s"), (("total_time_s_median", _medv("total_s")),)),
    Column("wall s", _m("wall_s", 2), _medv("wall_s"), (("wall_time_s_median", _medv("wall_s")),)),
    Column("wall min…max", lambda g: f"{g.wall_s.min:.2f}…{g.wall_s.max:.2f}" if _spread(g) else "–",
           lambda g: g.wall_s.min if _spread(g) else None,
           (("wall_time_s_min", _of("wall_s", "min")), ("wall_time_s_max", _of("wall_s", "max")))),
    Column("docs/s", _m("docs_per_s"), _medv("docs_per_s"), (("docs_per_sec_wall_median", _medv("docs_per_s")),)),
    Column("× ref", _m("ratio", 2), _medv("ratio"),
           (("ratio_to_reference_median", _medv("ratio")), ("ratio_min", _of("ratio", "min")),
            ("ratio_max", _of("ratio", "max")))),
    Column("rows compared", lambda g: "–" if g.rows_compared is None else f"{g.rows_compared:,}",
           _get("rows_compared"), (("rows_compared", _get("rows_compared")),)),
    Column("differences", None, _get("differences"),
           (("differences", _get("differences")), ("compared_runs", _get("compared"))), left=True,
           in_table=_differences),
    Column("lag s", _m("update_lag_s", 2), _medv("update_lag_s"), (("update_lag_s_median", _medv("update_lag_s")),)),
    Column("incr docs/s", _m("incremental_dps"), _medv("incremental_dps"),
           (("incremental_docs_per_sec_median", _medv("incremental_dps")),)),
) + _resources(qs_no_wrap=False) + (
    # in the CSV only (the console's table is wide already; Nouveau's section prints them in words)
    Column(None, csv=(("cpu_s_per_1000_docs_median", _medv("cpu_s_per_1k")), ("jvm_cpu_mean_pct", _get("jvm_cpu")),
                      ("index_mb_median", _get("index_mb")), ("index_errors", _get("index_errors")))),
)


# ---------------------------------------------------------------- the engine share: share.EngineShare
#
# The console and Markdown print it as one line per engine (`line`), the HTML page as a table.

def _x(v: float | None) -> str:
    return "–" if v is None else f"×{v:.2f}"


def _wall_line(e) -> str:
    spread = "" if e.runs < 2 else f" [{e.wall_min_s:.2f} … {e.wall_max_s:.2f}]"
    return f"{e.wall_s:8.2f} s{spread}"


SHARE = (
    Column("engine", _get("engine"), None, line=lambda e: f"{e.engine:<26}", sep=""),
    Column("runs", lambda e: str(e.runs), _get("runs"), line=lambda e: f"{e.runs} run(s)", sep=" "),
    Column("wall s (median)", lambda e: f"{e.wall_s:.2f}", _get("wall_s"), line=_wall_line),
    Column("× couchjs", lambda e: _x(e.x_couchjs), line=lambda e: f"{_x(e.x_couchjs):>6} couchjs"),
    Column("× ceiling", lambda e: _x(e.x_ceiling), line=lambda e: f"{_x(e.x_ceiling):>6} ceiling"),
    Column("× baseline", lambda e: _x(e.x_baseline), line=lambda e: f"{_x(e.x_baseline):>6} baseline"),
    Column("share [95% interval]", lambda e: "–" if e.share is None else e.share.format(),
           line=lambda e: "" if e.share is None else f"  share {e.share.format()}", sep=""),
)


def share_line(e) -> str:
    """One engine's line of the engine share, in the console and Markdown."""
    return "  " + "".join(c.sep + c.line(e) for c in SHARE if c.line is not None)


# ---------------------------------------------------------------- iostat per build: io_table.IoGroup
#
# medians over builds of each build's averages on the data's disk; JSON keeps the cells as text. These three
# tables print every column left-justified, in the console as in Markdown.

IO = (
    Column("design doc / view", _get("where"), None),
    Column("engine", _get("engine"), None),
    Column("storage", _get("storage"), None),
    Column("builds", lambda g: str(g.builds), _get("builds")),
    Column("device", _get("devices"), None),
    Column("r/s", _plain("r_s"), _get("r_s")),
    Column("rkB/s", _plain("rkb_s"), _get("rkb_s")),
    Column("w/s", _plain("w_s"), _get("w_s")),
    Column("wkB/s", _plain("wkb_s"), _get("wkb_s")),
    Column("r_await ms", _plain("r_await"), _get("r_await")),
    Column("%util", _plain("util_pct"), _get("util_pct")),
)


# ---------------------------------------------------------------- the size sweep: results.schema.SizeRow
#
# build s and docs/s are medians over the size's runs; sizes are sorted by bytes

def _f(get: Getter, fmt: str) -> Getter:
    return lambda r: "–" if get(r) is None else format(get(r), fmt)


def _median_of(attr: str) -> Getter:
    import statistics

    return lambda r: statistics.median(getattr(r, attr)) if getattr(r, attr) else None


def _size(get: Getter) -> Getter:
    from dragnet.couchdb.storage import format_size

    return lambda r: "–" if get(r) is None else format_size(get(r))


def _over_memory(r) -> str:
    return "FIRST" if r.first_exceeding else ("yes" if r.exceeds_memory else "no")


SIZES = (
    Column("language", _get("language"), None),
    Column("scenario", lambda r: r.scenario or "–", None),
    Column("docs", lambda r: f"{r.size:,}", _get("size")),
    Column("runs", lambda r: str(r.runs), _get("runs")),
    Column("build s median", _f(_median_of("seconds"), ".2f"), _median_of("seconds")),
    Column("docs/s median", _f(_median_of("docs_per_sec"), ".0f"), _median_of("docs_per_sec")),
    Column("db file", _size(_get("db_file")), _get("db_file")),
    Column("index file", _size(_get("index_file")), _get("index_file")),
    Column("peak memory", lambda r: _size(_get("peak_memory"))(r) + (f" ({r.peak_source})" if r.peak_source else ""),
           _get("peak_memory")),
    Column("> memory limit", _over_memory, None),
)


# ---------------------------------------------------------------- "disk matters?": axes.scenario.Row
#
# × reference: docs/s against the reference scenario's; iostat: per-build averages on the data's device

def _io(key: str) -> Getter:
    return lambda r: (r.iostat or {}).get(key)


DISK = (
    Column("language", _get("language"), None),
    Column("storage", _get("storage"), None),
    Column("scenario", _get("scenario"), None),
    Column("runs", lambda r: str(len(r.docs_per_sec)), lambda r: len(r.docs_per_sec)),
    Column("docs/s median", _f(_median_of("docs_per_sec"), ".0f"), _median_of("docs_per_sec")),
    Column("× reference", _f(_get("ratio"), ".2f"), _get("ratio")),
    Column("slower every round", lambda r: "yes" if r.slower_every_round else "no", None),
    Column("OOM", lambda r: str(r.oom), _get("oom")),
    Column("r/s", _f(_io("r_s"), ".0f"), _io("r_s")),
    Column("rkB/s", _f(_io("rkb_s"), ".0f"), _io("rkb_s")),
    Column("r_await ms", _f(_io("r_await"), ".2f"), _io("r_await")),
    Column("%util", _f(_io("util_pct"), ".1f"), _io("util_pct")),
)
