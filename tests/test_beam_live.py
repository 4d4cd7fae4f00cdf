"""beam's activity on real builds: the live CouchDB (local backend) and a container of dragnet's image
(docker backend), the probe's end on an interrupt, and data from an older dragnet keeping nonode@nohost."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from dragnet.couchdb.client import connect
from dragnet.measure import beam
from dragnet.measure import beam_probe
from conftest import couch_env

VIEW = "function(doc) { emit(doc.type, doc.n); }"


def _fill(couch, db: str, n: int = 5000) -> None:
    couch.request("PUT", f"/{db}?q=2", ok=(201, 202))
    docs = [{"_id": f"d{i:05d}", "type": f"t{i % 7}", "n": i} for i in range(n)]
    couch.request("POST", f"/{db}/_bulk_docs", json={"docs": docs}, ok=(201,))


def _probes_running() -> list[int]:
    """This test process's children whose command line names a probe node (other users' probes run here too)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
                if ppid == os.getpid() and b"dragnet_probe_" in Path(f"/proc/{entry}/cmdline").read_bytes():
                    out.append(int(entry))
            except (OSError, IndexError, ValueError):
                pass
    return out


def _cookie() -> str:
    return (Path.home() / ".erlang.cookie").read_text().strip()


def test_live_build_records_beam_activity_by_kind(live_url, live_db, tmp_path):
    from dragnet.index import addview

    couch, db = live_db
    _fill(couch, db, 20000)     # a build of several probe periods: the loader lives across a sample
    view = tmp_path / "v.js"
    view.write_text(VIEW)
    res = addview.benchmark(url=live_url, db=db, view_path=str(view), results_dir=str(tmp_path))
    assert res["summary"]["ok"], res["summary"]["error"]
    rec = res["beam_activity"]
    assert rec["absent"] is None, rec["absent"]
    (name, node), = rec["nodes"].items()
    assert name.startswith("dragnet") and name.endswith("@127.0.0.1")
    kinds = beam.reductions_by_kind(node)
    assert kinds["loader"] > 0 and kinds["mapper"] > 0 and kinds["query server"] > 0, kinds
    s = beam.summary(rec, res["cpu"])
    assert s["work_s"] > 0 and s["activities"]
    # beam's CPU by activity: its threads' CPU (schedstat), which is beam.smp's utime + stime to the tick
    assert s["cpu_activities"] and s["cpu_s"] == pytest.approx(res["cpu"]["by_process"]["beam.smp"], abs=0.1), \
        (s["cpu_s"], res["cpu"])
    assert 0 < s["msacc_coverage"] <= 1 and rec["msacc_on_ms"] < rec["period_ms"]
    # the probe's own process: measured by the kernel, and gone with the build
    p = rec["probe"]
    assert p["cpu_s"] > 0 and p["cpu_during_build_s"] >= 0 and p["cpu_after_build_s"] > 0, p
    # its start (boot, compile) is counted in all only: the build's share is less than the whole
    assert p["cpu_during_build_s"] + p["cpu_after_build_s"] < p["cpu_s"], p
    assert _probes_running() == []
    # no cookie in its argv or in the results file
    written = (tmp_path / next(p.name for p in tmp_path.glob("addview-*.json"))).read_text()
    assert _cookie() not in written and _cookie() not in json.dumps(rec["probe"]["argv"])


def test_live_interrupted_probe_ends_and_the_next_one_starts(live_url):
    first = beam_probe.BuildBeam(live_url).start()
    assert first.why is None and first.probes
    assert _probes_running()
    first.abort()     # what an interrupted build does
    assert _probes_running() == []
    second = beam_probe.BuildBeam(live_url).start()
    rec = second.stop()
    assert rec["absent"] is None and beam.summary(rec) is not None
    assert _probes_running() == []


# --- docker backend: a container of dragnet's image

IMAGE = os.environ.get("DRAGNET_TEST_DOCKER_IMAGE", "")
SECRET = "beam-Pr0be-pw"


@pytest.fixture()
def container_env(tmp_path, engine):
    from conftest import free_port

    env = couch_env(tmp_path, SECRET)
    port = free_port()
    yield env, port
    from dragnet.couchdb import control as ctl
    from dragnet.couchdb import docker as dk

    inst = ctl.load_state(port, env)
    if inst is not None:
        dk.stop(inst, env=env, purge=True, timeout=5)
    try:
        engine.volumes.get(dk.volume_name(port)).remove()
    except Exception:   # noqa: BLE001 - purged with the container already
        pass


@pytest.mark.docker
def test_docker_build_records_beam_activity_from_inside_the_container(engine, container_env, tmp_path):
    from dragnet.couchdb import docker as dk
    from dragnet.index import addview

    env, port = container_env
    inst = dk.up(port=port, image=IMAGE, env=env)
    container = engine.containers.get(inst.container)
    assert dk.erlang_node(container.attrs) == "couchdb@127.0.0.1"
    url = f"http://admin:{SECRET}@127.0.0.1:{port}"
    _fill(connect(url), "beam_docker", 20000)    # as the local test: the loader lives across a sample
    view = tmp_path / "v.js"
    view.write_text(VIEW)
    os.environ["DRAGNET_STATE_DIR"], old = env["DRAGNET_STATE_DIR"], os.environ.get("DRAGNET_STATE_DIR")
    try:
        res = addview.benchmark(url=url, db="beam_docker", view_path=str(view), results_dir=str(tmp_path))
    finally:
        os.environ.pop("DRAGNET_STATE_DIR") if old is None else os.environ.update(DRAGNET_STATE_DIR=old)
    rec = res["beam_activity"]
    assert rec["absent"] is None and rec["probe"]["backend"] == "docker"
    node = rec["nodes"]["couchdb@127.0.0.1"]
    assert beam.reductions_by_kind(node)["loader"] > 0
    # the exec ended with the build
    assert "dragnet_probe_" not in json.dumps(container.top(ps_args="-eo pid,args"))
    assert SECRET not in json.dumps(rec)


@pytest.mark.docker
def test_docker_volume_of_an_older_dragnet_keeps_nonode(engine, container_env):
    from dragnet.couchdb import docker as dk

    env, port = container_env
    # a data volume as an older dragnet made it: its label, not the node's
    engine.volumes.create(name=dk.volume_name(port), labels={dk.LABEL: str(port)})
    notes: list[str] = []
    inst = dk.up(port=port, image=IMAGE, env=env, progress=notes.append)
    assert any("nonode@nohost" in n for n in notes), notes
    assert dk.erlang_node(engine.containers.get(inst.container).attrs) is None
    targets, why = beam_probe.find_targets(f"http://127.0.0.1:{port}", env)
    assert targets == [] and "nonode@nohost" in why


def test_live_probe_of_a_node_that_is_not_there_says_so(live_url):
    (target,), _ = beam_probe.find_targets(live_url)
    probe = beam_probe.Probe(beam_probe.Target("local", ("dragnet_nosuch@127.0.0.1",), home=target.home)).start()
    parsed = beam.parse(probe.stop())
    assert list(parsed) == ["dragnet_nosuch@127.0.0.1"] and "cannot connect" in parsed["dragnet_nosuch@127.0.0.1"]["error"]
    rec = {"absent": None, "nodes": parsed}
    assert beam.summary(rec) is None and beam.why_none(rec).startswith("dragnet_nosuch@127.0.0.1: cannot connect")


@pytest.mark.parametrize("msacc_on_ms", [beam_probe.MSACC_ON_MS, beam_probe.PERIOD_MS])
def test_live_figures_count_from_the_builds_begin(live_url, msacc_on_ms):
    """A probe watching an idle node for 2 s, then begun: its figures cover only the time after begin, at one
    sample a period, with msacc in windows or on throughout."""
    import time

    (target,), _ = beam_probe.find_targets(live_url)
    probe = beam_probe.Probe(target, msacc_on_ms=msacc_on_ms).start()
    time.sleep(2)
    assert probe.begin()
    time.sleep(1.0)
    (node,) = beam.parse(probe.stop()).values()
    assert 0.9 < node["wall_s"] < 2.4, node["wall_s"]
    assert 1 <= node["samples"] <= node["wall_s"] * 1000 / beam_probe.PERIOD_MS + 2, node
    covered = node["msacc_on_s"] / node["wall_s"]
    if msacc_on_ms < beam_probe.PERIOD_MS:     # a tenth of the time, give or take a window
        assert 0.02 < covered < 0.5, covered
    else:
        assert covered > 0.9, covered


def test_live_a_second_probe_of_the_node_does_not_reset_the_first(live_url):
    """Two probes of one node with msacc on throughout: the first's counters still cover its whole build after
    the second one began and ended inside it."""
    import time

    (target,), _ = beam_probe.find_targets(live_url)
    first = beam_probe.Probe(target, msacc_on_ms=beam_probe.PERIOD_MS).start()
    assert first.begin()
    time.sleep(1.0)
    second = beam_probe.Probe(target, msacc_on_ms=beam_probe.PERIOD_MS).start()
    assert second.begin()
    time.sleep(0.5)
    (inner,) = beam.parse(second.stop()).values()
    time.sleep(1.0)
    (outer,) = beam.parse(first.stop()).values()
    assert inner["msacc_on_s"] / inner["wall_s"] > 0.9, inner
    assert outer["wall_s"] > 2.3 and outer["msacc_on_s"] / outer["wall_s"] > 0.9, outer
