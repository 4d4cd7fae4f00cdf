"""servers --check's list cases, written from what couchjs does when CouchDB sends a row after the list function
has ended (CouchDB 3.5.0's query_server_spec.rb, "should exit if erlang sends too many rows"), and that spec itself
run against dragnet's JavaScript servers when it is at hand."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from dragnet.servers import conformance
from dragnet.servers.conformance import Reply
from dragnet.servers.available import discover

ROOT = Path(__file__).resolve().parent.parent


def test_a_row_after_the_end_wants_couchjs_answer_and_exit():
    expect = conformance.error_then_exit("unknown_command")
    assert expect.ok(Reply(error=("unknown_command", "unknown command 'list_row'"), alive=False))      # couchjs
    assert expect.ok(Reply(gone="exited: code 1", alive=False))                                         # QuickJS
    assert not expect.ok(Reply(error=("list_error", "no list function is running"), alive=False))
    assert not expect.ok(Reply(error=("unknown_command", "unknown command 'list_row'"), alive=True))
    assert not expect.ok(Reply(answer=["chunks", ["k2"]], alive=True))


def test_the_early_list_case_ends_on_the_row_the_function_returned_at():
    steps = conformance.CASE["list_ended_early"].steps(conformance.JS_FUNCTIONS)
    sent = [s.send[0] if s.send[0] != "ddoc" else s.send[1] for s in steps]
    assert sent == ["reset", "new", conformance.DDOC_ID, "list_row", "list_row", "list_row"]
    assert steps[-2].expect.ok(Reply(answer=["end", ["<k2>", "early"]]))


@pytest.mark.parametrize("name", ["chakra", "node", "bun", "python3", "couchjs"])
def test_servers_pass_the_list_cases(name):
    specs, skipped = discover()
    spec = next((s for s in specs if s.name == name), None)
    if spec is None:
        pytest.skip(f"{name}: {next((s.reason for s in skipped if s.name == name), 'not found')}")
    report = conformance.check_server(spec, cases=["list_too_many_rows", "list_ended_early"], timeout=30.0)
    assert [(o.case, o.status, o.got) for o in report.outcomes] == [
        ("list_too_many_rows", "pass", ""), ("list_ended_early", "pass", "")]


# CouchDB's spec is Apache's and is not kept here: point DRAGNET_QS_SPEC at test/view_server/query_server_spec.rb
# of a CouchDB 3.5.0 checkout (docs/query-servers.md)
@pytest.mark.skipif(not os.environ.get("DRAGNET_QS_SPEC") or not shutil.which("rspec"),
                    reason="DRAGNET_QS_SPEC (CouchDB's query_server_spec.rb) and rspec (ruby-rspec) needed")
@pytest.mark.parametrize("name", ["chakra", "node", "bun"])
def test_couchdb_query_server_spec_passes_25_of_25(name):
    specs, skipped = discover()
    spec = next((s for s in specs if s.name == name), None)
    if spec is None:
        pytest.skip(f"{name}: {next((s.reason for s in skipped if s.name == name), 'not found')}")
    run = subprocess.run([str(ROOT / "tools" / "query-server-spec"), os.environ["DRAGNET_QS_SPEC"], *spec.argv],
                         capture_output=True, text=True, timeout=300)
    assert "25 examples, 0 failures" in run.stdout, run.stdout[-3000:] + run.stderr[-2000:]
    assert run.returncode == 0
