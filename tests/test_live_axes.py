"""Live: the --config, --q and --cpus axes against a real CouchDB started by `dragnet couch up`."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dragnet.couchdb.client import connect, split_credentials

pytestmark = pytest.mark.live

ROOT = Path(__file__).resolve().parent.parent


def _data(tmp_path, n=120):
    from tests.conftest import normalised_declarations

    p = tmp_path / "d.jsonl"
    p.write_text("".join(json.dumps({**d, "_id": f"gen:{i}"}) + "\n"
                         for i, d in enumerate(normalised_declarations(n, 3))))
    return p


def _bench(live_url, tmp_path, *args, wait=True, env_extra=None):
    base, user, password = split_credentials(live_url)
    env = {**os.environ, "COUCHDB_USER": user or "", "COUCHDB_PASSWORD": password or "",
           "PYTHONPATH": str(ROOT), **(env_extra or {})}
    argv = [sys.executable, "-m", "dragnet", "bench", "--url", base, "--results", str(tmp_path / "out"),
            "--languages", "javascript", *args]
    if not wait:
        return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)


def _config(couch):
    return couch.get("/_node/_local/_config")


def _drop(couch, *dbs):
    for db in dbs:
        couch.request("DELETE", f"/{db}", ok=(200, 202, 404))


def test_a_config_sweep_records_each_value_and_puts_config_back(live_url, tmp_path):
    couch = connect(live_url)
    before = _config(couch)
    db = f"dragnet_axcfg_{int(time.time())}"
    try:
        p = _bench(live_url, tmp_path, "--db", db, "--data", str(_data(tmp_path)), "--repeat", "1", "--no-baseline", "--no-ceiling",
                   "--config", "view_updater/min_writer_items=50,200")
        assert p.returncode == 0, p.stdout + p.stderr
        m = json.loads((tmp_path / "out" / "bench.json").read_text())
        assert [r["axes"] for r in m["runs"]] == [{"config:view_updater/min_writer_items": "50"},
                                                  {"config:view_updater/min_writer_items": "200"}]
        results = [json.loads((tmp_path / "out" / r["result_file"]).read_text()) for r in m["runs"]]
        assert [r["bench"]["axes"]["config"] for r in results] == ["view_updater/min_writer_items=50",
                                                                   "view_updater/min_writer_items=200"]
        assert results[0]["couchdb"]["versions"]["couchdb"].startswith("3.")
        assert _config(couch) == before
    finally:
        _drop(couch, db)


def test_a_restart_setting_is_written_restarted_checked_and_undone(live_url, tmp_path):
    """--config-restart: each value in the ini and CouchDB restarted on it, read back; the node the bench
    found (its ini included) comes back."""
    from dragnet.bench.managed import managed_instance

    env = {**os.environ}
    inst = managed_instance(live_url, env)
    if inst is None or inst.backend != "local":
        pytest.skip("--config-restart restarts CouchDB: needs a local one started by `dragnet couch up`")
    couch = connect(live_url)
    before = _config(couch)
    db = f"dragnet_axrst_{int(time.time())}"
    try:
        p = _bench(live_url, tmp_path, "--db", db, "--data", str(_data(tmp_path, 40)), "--repeat", "1",
                   "--no-baseline", "--no-ceiling", "--config-restart", "couchdb/max_dbs_open=700,900")
        assert p.returncode == 0, p.stdout + p.stderr
        m = json.loads((tmp_path / "out" / "bench.json").read_text())
        assert [r["axes"] for r in m["runs"]] == [{"config:couchdb/max_dbs_open": "700"},
                                                  {"config:couchdb/max_dbs_open": "900"}]
        assert all(r["status"] == "ok" for r in m["runs"])
        results = [json.loads((tmp_path / "out" / r["result_file"]).read_text()) for r in m["runs"]]
        assert [r["bench"]["axes"]["config"] for r in results] == ["couchdb/max_dbs_open=700",
                                                                   "couchdb/max_dbs_open=900"]
        # back on the node it found: same settings, no leftover line in its ini
        couch = connect(live_url)
        assert _config(couch)["couchdb"].get("max_dbs_open") == before["couchdb"].get("max_dbs_open")
        now = managed_instance(live_url, env)
        # the settings it was started with (e.g. Nouveau's, from `couch up --nouveau`) stay, and only those
        assert now.ini == inst.ini and "max_dbs_open = 700" not in (Path(now.run_dir) / "local.ini").read_text()
    finally:
        _drop(connect(live_url), db)


def test_config_is_put_back_when_sigterm_arrives_mid_sweep(live_url, tmp_path):
    couch = connect(live_url)
    before = _config(couch)
    db = f"dragnet_axterm_{int(time.time())}"
    try:
        p = _bench(live_url, tmp_path, "--db", db, "--data", str(_data(tmp_path, 400)), "--repeat", "3",
                   "--config", "view_updater/min_writer_items=50,200", wait=False)
        deadline = time.time() + 120
        manifest = tmp_path / "out" / "bench.json"
        while time.time() < deadline:   # wait until a build runs with a value the bench set
            try:
                running = any(r["status"] == "running" for r in json.loads(manifest.read_text())["runs"])
            except (OSError, ValueError):
                running = False
            if running and couch.get("/_node/_local/_config/view_updater").get("min_writer_items") in ("50", "200"):
                break
            time.sleep(0.05)
        else:
            p.kill()
            pytest.fail("the bench never set the setting")
        p.send_signal(signal.SIGTERM)
        out, _ = p.communicate(timeout=120)
        assert p.returncode == 128 + signal.SIGTERM, out
        assert _config(couch) == before, out
        m = json.loads((tmp_path / "out" / "bench.json").read_text())
        assert m["interrupted"] and m["config_restored"]["restored"] == ["view_updater/min_writer_items"]
    finally:
        _drop(couch, db)


def test_a_value_couchdb_refuses_and_an_unknown_key_are_one_line_errors_before_any_build(live_url, tmp_path):
    couch = connect(live_url)
    before = _config(couch)
    p = _bench(live_url, tmp_path, "--db", "dragnet_axbad", "--config", "view_updater/gc_interval_doc=1")
    assert p.returncode != 0 and "did you mean" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    # a section CouchDB will not let _config write (403: blacklisted for the HTTP API)
    p = _bench(live_url, tmp_path, "--db", "dragnet_axbad", "--config",
               "native_query_servers/enable_erlang_query_server=false")
    assert p.returncode != 0 and "CouchDB does not take it over HTTP (403" in p.stderr, p.stdout + p.stderr
    assert "--config-restart native_query_servers/enable_erlang_query_server" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out" / "bench.json").exists()
    assert _config(couch) == before


def test_a_misspelt_key_is_refused_on_a_server_given_by_url_before_a_missing_database(live_url, tmp_path):
    # an empty state dir: dragnet does not manage this server, so it cannot read its default.ini; the
    # catalogue of what 3.5's code reads knows [view_updater] queue_item_cap, which default.ini does not name
    couch = connect(live_url)
    before = _config(couch)
    state = {"DRAGNET_STATE_DIR": str(tmp_path / "state")}
    p = _bench(live_url, tmp_path, "--db", "dragnet_axnosuch", "--no-baseline", "--no-ceiling",
               "--config", "view_updater/queue_item_capp=50", env_extra=state)
    assert p.returncode != 0, p.stdout + p.stderr
    assert "--config view_updater/queue_item_capp is not a setting of CouchDB 3.5" in p.stderr
    assert "did you mean view_updater/queue_item_cap?" in p.stderr and "Database" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and not (tmp_path / "out" / "bench.json").exists()
    # the key spelt right passes the check (and the missing database is what stops it then)
    p = _bench(live_url, tmp_path, "--db", "dragnet_axnosuch", "--no-baseline", "--no-ceiling",
               "--config", "view_updater/queue_item_cap=50", env_extra=state)
    assert p.returncode != 0 and "not a setting" not in p.stderr and "Database does not exist" in p.stderr
    assert _config(couch) == before


def test_a_misspelt_key_is_refused_before_the_bench_starts_a_couchdb(live_url, tmp_path):
    from tests.conftest import free_port

    home = os.environ.get("DRAGNET_COUCHDB_HOME")
    if not home:
        pytest.skip("needs a CouchDB release (DRAGNET_COUCHDB_HOME)")
    port = free_port()
    state = tmp_path / "state"
    _, user, password = split_credentials(live_url)
    p = _bench(f"http://{user}:{password}@127.0.0.1:{port}", tmp_path, "--backend", "local", "--db", "dragnet_axnosuch",
               "--no-baseline", "--no-ceiling", "--config", "view_updater/queue_item_capp=50",
               env_extra={"DRAGNET_STATE_DIR": str(state), "DRAGNET_COUCHDB_HOME": home})
    assert p.returncode != 0, p.stdout + p.stderr
    assert "did you mean view_updater/queue_item_cap?" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    assert "starting CouchDB" not in p.stdout + p.stderr and not list(state.glob("couch-*.json"))


def test_q_axis_builds_on_2_and_8_shards(live_url, tmp_path):
    couch = connect(live_url)
    db = f"dragnet_axq_{int(time.time())}"
    try:
        p = _bench(live_url, tmp_path, "--db", db, "--data", str(_data(tmp_path)), "--repeat", "1", "--no-baseline", "--no-ceiling",
                   "--q", "2,8")
        assert p.returncode == 0, p.stdout + p.stderr
        m = json.loads((tmp_path / "out" / "bench.json").read_text())
        res = [json.loads((tmp_path / "out" / r["result_file"]).read_text()) for r in m["runs"]]
        assert [r["bench"]["axes"]["q"] for r in res] == ["2", "8"]
        assert [couch.get(f"/{r['bench']['db']}")["cluster"]["q"] for r in res] == [2, 8]
        # indexer tasks seen are per shard: never more than the database's q
        assert all((r["summary"].get("shards") or 0) <= q for r, q in zip(res, (2, 8)))
    finally:
        _drop(couch, f"{db}-q2", f"{db}-q8")


def test_cpus_1_holds_beam_and_a_query_server(live_url, tmp_path):
    from dragnet.bench.managed import managed_instance

    env = {**os.environ}
    if managed_instance(live_url, env) is None:
        pytest.skip("--cpus restarts CouchDB: needs one started by `dragnet couch up` (DRAGNET_STATE_DIR)")
    couch = connect(live_url)
    db = f"dragnet_axcpu_{int(time.time())}"
    try:
        p = _bench(live_url, tmp_path, "--db", db, "--data", str(_data(tmp_path)), "--repeat", "1", "--no-baseline", "--no-ceiling",
                   "--cpus", "1")
        assert p.returncode == 0, p.stdout + p.stderr
        m = json.loads((tmp_path / "out" / "bench.json").read_text())
        checked = m["runs"][0]["cpuset"]
        assert checked["cores"] == [sorted(os.sched_getaffinity(0))[0]]
        names = set(checked["processes"].values())
        assert "beam.smp" in names and "couchjs" in names, names
        if os.geteuid() == 0 and Path("/sys/fs/cgroup/cpuset/cpuset.cpus").exists():
            # a cpuset cgroup held them (every checked pid was in it), and it went with the restart back
            group = checked["via"].split(" ", 1)[1]
            assert checked["via"].startswith("cgroup ") and "dragnet-couch-" in group
            assert not Path(group).exists() or managed_instance(live_url, env).cpuset_group == group
        else:
            assert checked["via"] == "affinity"
    finally:
        _drop(couch, db)
    p = _bench(live_url, tmp_path, "--db", db, "--cpus", "3")
    if len(os.sched_getaffinity(0)) < 3:
        assert p.returncode != 0 and "--cpus 3" in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_two_ddoc_revisions_are_built_in_every_round_and_labelled(live_url, tmp_path):
    couch = connect(live_url)
    db = f"dragnet_axddoc_{int(time.time())}"
    try:
        p = _bench(live_url, tmp_path, "--db", db, "--data", str(_data(tmp_path, 60)), "--repeat", "2", "--no-baseline", "--no-ceiling",
                   "--ddoc", f"file={ROOT / 'tests/ddocs/app.json'}", "--ddoc", f"folder={ROOT / 'tests/ddocs/app'}")
        assert p.returncode == 0, p.stdout + p.stderr
        m = json.loads((tmp_path / "out" / "bench.json").read_text())
        assert [(r["repeat"], r["axes"]["ddoc"]) for r in m["runs"]] == [(0, "file"), (0, "folder"), (1, "file"),
                                                                         (1, "folder")]
        res = [json.loads((tmp_path / "out" / r["result_file"]).read_text()) for r in m["runs"]]
        assert [r["bench"]["axes"]["ddoc"] for r in res] == ["file", "folder", "file", "folder"]
        assert set(m["design"]["revisions"]) == {"file", "folder"}
    finally:
        _drop(couch, db)


def test_couchdb_axis_without_config_warns_of_no_config_keys(live_url, tmp_path):
    """--couchdb alone checks each install but no --config key: no warning about keys, no config_keys."""
    from dragnet.bench.managed import managed_instance

    inst = managed_instance(live_url, {**os.environ})
    if inst is None or inst.backend != "local" or not inst.home:
        pytest.skip("--couchdb restarts CouchDB: needs a local one started by `dragnet couch up`")
    db = f"dragnet_axcdb_{int(time.time())}"
    try:
        p = _bench(live_url, tmp_path, "--db", db, "--data", str(_data(tmp_path, 40)), "--repeat", "1",
                   "--no-baseline", "--no-ceiling", "--couchdb", inst.home)
        assert p.returncode == 0, p.stdout + p.stderr
        assert "--config keys" not in p.stdout + p.stderr
        m = json.loads((tmp_path / "out" / "bench.json").read_text())
        assert [r["status"] for r in m["runs"]] == ["ok"] and "config_keys" not in m
    finally:
        _drop(connect(live_url), db)


def test_the_nodes_view_updater_settings_are_recorded_with_its_version(live_url):
    # the writer's queue cap bounds how far a sweep's disk growth carries (forecast.writer_queue): the
    # version record holds what the node was given, the version's default where it was given nothing
    from dragnet.forecast import writer_queue as wq

    couch = connect(live_url)
    path = "/_node/_local/_config/view_updater/queue_memory_cap"
    before = couch.request("GET", path, ok=(200, 404))
    try:
        couch.put(path, "12345678")
        info = couch.version()
        assert info["view_updater"]["queue_memory_cap"] == "12345678"
        assert wq.queue_cap(info) == (12_345_678, "set on the node")
    finally:
        if before.status_code == 200:
            couch.put(path, before.json())
        else:
            couch.request("DELETE", path, ok=(200, 404))
    info = couch.version()
    assert isinstance(info["view_updater"], dict)
    assert info["view_updater"].get("queue_memory_cap") == (before.json() if before.status_code == 200 else None)
