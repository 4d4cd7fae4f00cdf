"""addview's orchestration (run_benchmark and _poll_until_done) with no CouchDB: a loopback server replays
a build recorded on CouchDB 3.5.0 (../shared/fixtures), and misbehaves where a test says so."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from urllib.parse import quote

import pytest
from loopback import Loopback

from dragnet.index import addview as addview
from dragnet.couchdb.client import connect
from dragnet.errors import DragnetError

REPO = Path(__file__).resolve().parent.parent
DB = "decl"


class Replay:
    """CouchDB during one recorded build: /_active_tasks gives the recorded polls in order, then the
    post-build polls; the view query answers once every build poll has been served."""

    def __init__(self, build_dir: Path, *, view_answers: list | None = None, drop_tasks_at: int | None = None):
        self.meta = json.loads((build_dir / "meta.json").read_text())
        self.ddoc = self.meta["ddoc_id"]
        self.polls = _jsonl(build_dir / "active_tasks.jsonl")
        self.post = _jsonl(build_dir / "active_tasks_post.jsonl")
        self.served = 0
        self.built = threading.Event()
        self.view_answers = list(view_answers or [])
        self.drop_tasks_at = drop_tasks_at
        self.ddoc_exists = False
        self.view_path = addview.view_query_path(DB, self.ddoc[len("_design/"):], "income", False).split("?")[0]

    def __call__(self, method: str, path: str, body: bytes):
        ddoc_path = f"/{DB}/{quote(self.ddoc, safe='/')}"
        if (method, path) == ("GET", "/"):
            return 200, {}, {"couchdb": "Welcome", "version": "3.5.0"}
        if (method, path) == ("GET", f"/{DB}"):
            return 200, {}, {"db_name": DB, "doc_count": 40000, "cluster": {"q": 8, "n": 1}}
        if (method, path) == ("GET", "/_membership"):
            return 200, {}, {"all_nodes": ["couchdb@127.0.0.1"], "cluster_nodes": ["couchdb@127.0.0.1"]}
        if path == ddoc_path:
            if method == "PUT":
                self.ddoc_exists = True
                return 201, {}, self.meta["put_ddoc"]["body"]
            if method == "DELETE":
                self.ddoc_exists = False
                return 200, {}, {"ok": True}
            return (200, {}, {"_id": self.ddoc}) if self.ddoc_exists else (404, {}, {"error": "not_found"})
        if (method, path) == ("POST", f"/{DB}/_view_cleanup"):
            return 202, {}, {"ok": True}
        if (method, path) == ("GET", f"{ddoc_path}/_info"):
            return 200, {}, self.meta["info_before"]["body"]
        if (method, path) == ("GET", "/_active_tasks"):
            self.served += 1
            if self.drop_tasks_at is not None and self.served >= self.drop_tasks_at:
                return "drop"
            if self.served <= len(self.polls):
                return 200, {}, self.polls[self.served - 1]["tasks"]
            self.built.set()
            return 200, {}, self.post[min(self.served - len(self.polls), len(self.post)) - 1]["tasks"]
        if (method, path) == ("GET", self.view_path):
            if self.view_answers:
                return self.view_answers.pop(0)
            self.built.wait(60)
            return 200, {}, {"total_rows": 31984, "offset": 0, "rows": []}
        return 404, {}, {"error": "not_found", "reason": "missing"}


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _config(replay: Replay, tmp_path: Path) -> addview.Config:
    return addview.Config(view_path=str(REPO / "views/income/map.js"), db=DB, ddoc=replay.ddoc[len("_design/"):],
                          view="income", interval=0.01, timeout=60, pidstat=False, storage="disk",
                          results_dir=str(tmp_path / "results"))


def _env(tmp_path: Path) -> dict:
    return {"DRAGNET_STATE_DIR": str(tmp_path / "state"), "HOME": str(tmp_path)}


def _expected_shard_changes(polls: list[dict], ddoc: str) -> dict[str, int]:
    """Per shard, the last changes_done of each indexer pid, summed: written out from the raw polls."""
    last: dict[tuple[str, str], int] = {}
    for poll in polls:
        for t in poll["tasks"]:
            if t["type"] == "indexer" and t["design_document"] == ddoc:
                last[(t["database"], t["pid"])] = t["changes_done"]
    out: dict[str, int] = {}
    for (shard_db, _pid), changes in last.items():
        shard = shard_db.split("/")[1]          # shards/00000000-1fffffff/decl.1795... -> the range
        out[shard] = out.get(shard, 0) + changes
    return out


def test_a_recorded_build_replays_into_the_recorded_figures(fixtures_dir, tmp_path):
    replay = Replay(fixtures_dir / "javascript")
    with Loopback(handler=replay) as lb:
        out = addview.run_benchmark(connect(lb.url), _config(replay, tmp_path), env=_env(tmp_path))
    res = out.results
    s = res["summary"]
    assert s["ok"] and s["rows"] == 31984 and s["docs"] == 40000
    # every recorded poll is kept raw, in order, followed by the ones after the view answered
    recorded = [p["tasks"] for p in res["polls"]]
    assert recorded[:len(replay.polls)] == [p["tasks"] for p in replay.polls]
    # the per-shard table is the raw polls' last changes_done per task, catch-up tasks included
    got = {row["shard"]: row["changes"] for row in res["per_shard"]}
    assert got == _expected_shard_changes(replay.polls, replay.ddoc)
    assert s["changes"] == sum(got.values()) > 40000            # catch-up work after compaction counts
    assert s["compaction_tasks_ignored"] > 0                       # the compactor's tasks share the ddoc
    assert res["storage"] == "disk" and res["db"]["shards"] == 8
    assert out.path is not None and json.loads(Path(out.path).read_text())["summary"]["rows"] == 31984
    # the design doc the user named is kept
    assert not lb.requests("DELETE", f"/{DB}/{quote(replay.ddoc, safe='/')}")
    assert "deleted_after_benchmark" not in res["view"]


def test_request_timeout_is_reissued_and_recorded(fixtures_dir, tmp_path):
    timeout_500 = (500, {}, {"error": "timeout", "reason": "The request could not be processed in a reasonable "
                                                            "amount of time."})
    replay = Replay(fixtures_dir / "javascript", view_answers=[timeout_500])
    with Loopback(handler=replay) as lb:
        out = addview.run_benchmark(connect(lb.url), _config(replay, tmp_path), env=_env(tmp_path))
        asked = len(lb.requests("GET", replay.view_path))
    assert out.results["summary"]["ok"]
    assert asked == 2
    assert len(out.results["trigger"]["reissued_at"]) == 1


def test_couchdb_vanishing_mid_build_fails_with_results_and_removes_the_ddoc(fixtures_dir, tmp_path):
    replay = Replay(fixtures_dir / "javascript", drop_tasks_at=10)
    with Loopback(handler=replay) as lb:
        with pytest.raises(addview.BuildFailed) as err:
            addview.run_benchmark(connect(lb.url), _config(replay, tmp_path), env=_env(tmp_path))
        replay.built.set()        # let the view request's thread go
    assert "stopped answering" in str(err.value)
    res = err.value.results
    assert res["summary"]["ok"] is False and len(res["polls"]) == 9
    assert res["view"]["deleted_after_failure"] is True and not replay.ddoc_exists
    assert lb.requests("POST", f"/{DB}/_view_cleanup")             # its index files are dropped too
    assert list((tmp_path / "results").rglob("*.json"))           # the failed build is on record


def test_an_interrupt_mid_build_removes_the_fresh_ddoc(fixtures_dir, tmp_path):
    replay = Replay(fixtures_dir / "javascript")

    def on_poll(tracker, poll):
        if replay.served == 5:
            raise KeyboardInterrupt

    with Loopback(handler=replay) as lb:
        with pytest.raises(KeyboardInterrupt):
            addview.run_benchmark(connect(lb.url), _config(replay, tmp_path), on_poll=on_poll, env=_env(tmp_path))
        replay.built.set()
    assert not replay.ddoc_exists
    assert not list((tmp_path / "results").rglob("*.json"))        # no half-measured result claims a rate


def test_a_design_doc_that_exists_is_refused_before_anything_runs(fixtures_dir, tmp_path):
    replay = Replay(fixtures_dir / "javascript")
    replay.ddoc_exists = True
    with Loopback(handler=replay) as lb:
        with pytest.raises(DragnetError, match="already exists"):
            addview.run_benchmark(connect(lb.url), _config(replay, tmp_path), env=_env(tmp_path))
        assert lb.requests("GET", "/_active_tasks") == []
        assert lb.requests("PUT", f"/{DB}/{quote(replay.ddoc, safe='/')}") == []


class LoadAfterTheAnswer(Replay):
    """After the build: one of the build's tasks still listed for two polls (its last batch), then gone, while
    a task that started after the answer (a load's view read updating the index) moves on every poll."""

    def __call__(self, method: str, path: str, body: bytes):
        if (method, path) == ("GET", "/_active_tasks") and self.served >= len(self.polls):
            self.served += 1
            self.built.set()
            k = self.served - len(self.polls)
            last = {"type": "indexer", "node": "couchdb@127.0.0.1", "pid": "<0.900.0>", "design_document": self.ddoc,
                    "database": "shards/00000000-1fffffff/decl.1", "changes_done": 5000, "total_changes": 5000,
                    "started_on": 1, "updated_on": 2}
            later = {**last, "pid": "<0.901.0>", "changes_done": k, "total_changes": 10 ** 9, "updated_on": 2 + k}
            return 200, {}, ([last] if k <= 3 else []) + ([later] if k >= 2 else [])
        return super().__call__(method, path, body)


def test_the_build_waits_for_its_own_last_tasks_not_for_tasks_started_after_the_answer(fixtures_dir, tmp_path):
    replay = LoadAfterTheAnswer(fixtures_dir / "javascript")
    with Loopback(handler=replay) as lb:
        out = addview.run_benchmark(connect(lb.url), _config(replay, tmp_path), env=_env(tmp_path))
    assert out.results["summary"]["ok"]
    after = [p["tasks"] for p in out.results["polls"][len(replay.polls):]]
    # it polled until the build's own task was gone (the poll after the answer listed it), no longer
    assert any(t["pid"] == "<0.900.0>" for t in after[-2]) and not any(t["pid"] == "<0.900.0>" for t in after[-1])
    assert any(t["pid"] == "<0.901.0>" for t in after[-1])


def _task(node: str, done: int, updated: int) -> dict:
    return {"type": "indexer", "node": node, "pid": "<0.1.0>", "changes_done": done, "updated_on": updated}


def test_the_build_is_over_once_no_task_of_the_ddoc_is_left():
    assert addview.build_over([], now=100.0, answered_at=100.0, changed_at=0.0)


def test_a_replica_still_listed_after_the_answer_keeps_the_build_going_while_it_moves():
    # n=3: the view answered from the fastest replicas 30 s ago; a slower one is still listed and moved 5 s ago
    lagging = [_task("couchdb@b", 375, 1000)]
    assert not addview.build_over(lagging, now=130.0, answered_at=100.0, changed_at=125.0)
    # a task at its total still maps its last batch (counted before it is mapped): listed, not moving, kept
    assert not addview.build_over(lagging, now=100.0 + addview.LINGER_S - 1, answered_at=100.0, changed_at=90.0)


def test_tasks_that_have_not_moved_for_the_linger_time_are_left_behind():
    stuck = [_task("couchdb@b", 375, 1000)]
    assert addview.build_over(stuck, now=100.0 + addview.LINGER_S + 1, answered_at=100.0, changed_at=50.0)
    assert addview.build_over(stuck, now=130.0 + addview.LINGER_S + 1, answered_at=100.0, changed_at=130.0)


def test_task_states_change_when_a_task_moves_and_not_with_the_list_order():
    a, b = _task("couchdb@a", 100, 10), _task("couchdb@b", 200, 10)
    assert addview.task_states([a, b]) == addview.task_states([b, a])
    assert addview.task_states([a, b]) != addview.task_states([a, _task("couchdb@b", 250, 11)])
    assert addview.task_states([a, b]) != addview.task_states([a])
