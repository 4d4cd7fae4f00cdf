"""qsbench's console output: without --verbose the warnings and the other metric's pairs are one line that says
how many there are and how to see them; with it, every one is printed."""

from __future__ import annotations

import io
import re

from click.testing import CliRunner
from rich.console import Console

from dragnet.cli import main
from dragnet.report.render.qsbench import collapsed_line, show_ranking


def test_collapsed_line_counts_what_it_leaves_out():
    assert collapsed_line(3, 6, "wall time") == "[yellow]3 warnings, 6 pairs on wall time[/]: `--verbose`"
    assert collapsed_line(1, 0, "wall time") == "[yellow]1 warning[/]: `--verbose`"
    assert collapsed_line(0, 1, "CPU") == "[yellow]1 pair on CPU[/]: `--verbose`"
    assert collapsed_line(0, 0, "CPU") is None


class _Pair:
    def __init__(self, metric):
        self.metric = metric


class _Bench:
    metric, order, rounds, stopped, decided = "cpu", "a > b", 5, "decided", True
    warnings = ["a: coefficient of variation 12% > 5%", "b: 1 statistical outlier(s)"]
    other_pairs = [_Pair("wall")]
    verdicts = []      # no pairs: the ranking lines are not printed, the warnings still are


def _printed(verbose: bool) -> str:
    buf = io.StringIO()
    show_ranking(Console(file=buf, width=200, color_system=None), _Bench(), verbose=verbose)
    return buf.getvalue()


def test_show_ranking_prints_every_warning_only_when_verbose():
    loud = _printed(True)
    assert "warning a: coefficient of variation" in loud and "warning b: 1 statistical" in loud
    quiet = _printed(False)
    assert quiet.strip() == "2 warnings: `--verbose`"


def test_cli_collapses_by_default_and_verbose_shows_all(sample, tmp_path):
    args = ["qsbench", "--docs", str(sample), "--servers", "python3,couchpy", "--repeat", "3", "--warmup", "0",
            "--results", str(tmp_path)]
    loud = CliRunner().invoke(main, [*args, "--verbose"])
    assert loud.exit_code == 0, loud.output
    assert "`--verbose`" not in loud.output and "  python3: " in loud.output    # the server's command line
    assert "harness share of the map loop's wall time" in loud.output
    other = sum(line.startswith("  (wall) ") for line in loud.output.splitlines())
    assert other == 1        # two servers: one pair on the other metric
    quiet = CliRunner().invoke(main, args)
    assert quiet.exit_code == 0, quiet.output
    assert not any(line.startswith(("warning ", "  (wall) ", "  python3: ")) for line in quiet.output.splitlines())
    # the harness's share shows without --verbose only where it is not negligible (above 10%)
    assert "harness share" not in quiet.output or "not negligible" in quiet.output
    # each run has its own warnings; the pair on wall time is there every time
    assert re.search(r"^(\d+ warnings?, )?1 pair on wall time: `--verbose`$", quiet.output, re.M), quiet.output
