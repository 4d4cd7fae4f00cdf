"""`--data URL/db` in bench and forecast: a sample of that database drawn once into cache/, as `dragnet sample` draws
it; a file is passed on as it is. (Drawn for real against a live CouchDB in tests/test_readme_steps.py.)"""

from __future__ import annotations

import socket

from click.testing import CliRunner

from dragnet.cli import main
from dragnet.cli.options import data_file


def test_a_file_or_nothing_is_passed_on():
    assert data_file(None, 10) is None
    assert data_file("app.jsonl.gz", 10) == "app.jsonl.gz"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_database_is_one_line_naming_it():
    port = _closed_port()
    for cmd in (["bench", "--languages", "javascript"], ["forecast", "--target-docs", "10k"]):
        r = CliRunner().invoke(main, [*cmd, "--url", f"http://127.0.0.1:{port}", "--db", "x",
                                      "--data", f"http://127.0.0.1:{port}/prod", "--sample-count", "50"])
        assert r.exit_code != 0
        assert f"cannot reach CouchDB at http://127.0.0.1:{port}" in r.output, r.output
        assert "Traceback" not in r.output
