"""dragnet's image, run for real: no CA in it, versions recorded, `couch up --backend docker`, every language
benchmarked inside it with beam and query-server resources measured, tmpfs, and `couch down --purge` leaving
nothing (clusters of the image: tests/test_docker_cluster.py).

Needs a Docker engine and the image in DRAGNET_TEST_DOCKER_IMAGE (built by `.ci/docker-engine start`, or by
`python -m dragnet.couchdb.docker build TAG`); skips otherwise.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import DOCKER_REPORT, couch_env, normalised_declarations

from dragnet.index import addview as addview
from dragnet.results import addview_results as results
from dragnet.couchdb import docker as dk
from dragnet.cli import main
from dragnet.couchdb.client import connect, db_path

pytestmark = [pytest.mark.docker, pytest.mark.slow]

IMAGE = os.environ.get("DRAGNET_TEST_DOCKER_IMAGE")
SECRET = "d0cker-Image-pw"
VIEWS = Path(__file__).resolve().parent.parent / "views" / "income"
N_DOCS = 600
# language -> (view source, pidstat family of its query server; erlang runs inside beam)
LANGUAGES = {
    "javascript": ("map.js", "couchjs"),
    "javascript_quickjs": ("map.js", "quickjs"),
    "chakra": ("map.js", "chakra"),
    "python": ("map.py", "couchpy"),
    "python3": ("map.py", "dragnet_qs"),
    "pypy3": ("map.py", "dragnet_qs-pypy"),
    "erlang": ("map.erl", None),
    "node": ("map.js", "dragnet-node"),
    "bun": ("map.js", "dragnet-bun"),
    "ceiling": ("map.js", "ceiling"),     # the null server: one fixed row per document, whatever the view
}


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def _free_port(count: int = 1) -> int:
    """The first of `count` consecutive free loopback ports in DRAGNET_TEST_DOCKER_PORTS (default 16050-16099)."""
    lo, hi = (int(x) for x in os.environ.get("DRAGNET_TEST_DOCKER_PORTS", "16050-16099").split("-"))
    for port in range(lo, hi + 2 - count):
        if all(_bindable(p) for p in range(port, port + count)):
            return port
    pytest.skip(f"no {count} free ports in {lo}-{hi}")


def _up(env: dict, port: int, *extra: str) -> None:
    r = CliRunner().invoke(main, ["couch", "up", "--backend", "docker", "--image", IMAGE, "--port", str(port),
                                  *extra], env=env)
    assert r.exit_code == 0, r.output


def _down_leaves_nothing(c, env: dict, port: int, nodes: int = 1) -> None:
    r = CliRunner().invoke(main, ["couch", "down", "--port", str(port), "--purge"], env=env)
    assert r.exit_code == 0, r.output
    assert SECRET not in r.output
    for p in range(port, port + nodes):
        assert c.containers.list(all=True, filters={"label": f"{dk.LABEL}={p}"}) == []
        assert c.volumes.list(filters={"name": dk.volume_name(p)}) == []
    assert c.networks.list(names=[dk.network_name(port)]) == []


def test_image_holds_no_ca_and_records_versions(engine):
    # neither the build argument nor a certificate in the history (each layer's command) or the config (env)
    history = json.dumps(engine.api.history(IMAGE)) + json.dumps(engine.images.get(IMAGE).attrs)
    assert "PIP_EXTRA_CA" not in history and "BEGIN CERTIFICATE" not in history
    assert "NODE_EXTRA_CA_CERTS" not in history and "PIP_CERT" not in history
    run = lambda cmd: _run(engine, cmd)
    versions = run("cat /opt/dragnet/image-versions.txt").splitlines()
    packages = {ln.split()[1] for ln in versions if ln.startswith(("image ", "build "))}
    assert {"python3", "pypy3", "gcc"} <= packages
    assert any(ln.lower().startswith("pip couchdb==1.2") for ln in versions)
    assert {"nodejs", "npm"} <= {ln.split()[1] for ln in versions if ln.startswith(("image ", "bun-stage "))}
    assert any(ln.startswith("bun 1.") for ln in versions)
    ca = os.environ.get("DRAGNET_TEST_DOCKER_CA")
    if ca:
        # the bundle's certificates that no public store in the image holds (the proxy's CA) are in no file
        # where pip, npm or a stray COPY could have left them (the whole tree takes minutes to grep)
        public = run("cat /etc/ssl/certs/ca-certificates.crt "
                     "/opt/dragnet/venv/lib/python3*/site-packages/pip/_vendor/certifi/cacert.pem")
        extra = dk.extra_certificates(Path(ca).read_text(), public)
        lines = [c.strip().splitlines()[-2] for c in extra.split("-----END CERTIFICATE-----") if "BEGIN" in c]
        if lines:
            patterns = "\\n".join(lines)
            hits = run(f"printf '{patterns}\\n' > /dev/shm/p; grep -rlF -f /dev/shm/p /opt/dragnet /etc /tmp "
                       f"/root /home /usr/local /var/tmp 2>/dev/null || true")
            assert hits.strip() == "", f"the build's CA is in the image: {hits}"


def _run(engine, cmd: str) -> str:
    """Output of `sh -c cmd` in a fresh container of the image, removed with its anonymous volume."""
    container = engine.containers.create(IMAGE, ["sh", "-c", cmd], entrypoint=[])
    try:
        container.start()
        container.wait(timeout=300)
        return container.logs(stderr=False).decode()
    finally:
        container.remove(v=True, force=True)


@pytest.fixture(scope="module")
def docker_couch(engine, tmp_path_factory):
    env = couch_env(tmp_path_factory.mktemp("docker"), SECRET)
    port = _free_port()
    _up(env, port)
    url = f"http://admin:{SECRET}@127.0.0.1:{port}"
    couch = connect(url)
    db = f"dragnet_docker_{int(time.time())}"
    docs = normalised_declarations(N_DOCS, 5)
    couch.put(db_path(db), params={"q": "2"})
    couch.post(f"{db_path(db)}/_bulk_docs", {"docs": docs})
    yield engine, env, port, couch, db
    _down_leaves_nothing(engine, env, port)


def test_every_language_builds_inside_the_image_with_resources(docker_couch, tmp_path):
    c, env, port, couch, db = docker_couch
    rows = {}
    for lang, (source, fam) in LANGUAGES.items():
        cfg = addview.Config(view_path=str(VIEWS / source), db=db, language=lang, ddoc=f"bench_{lang}",
                             results_dir=str(tmp_path / lang), timeout=180,
                             argv=["dragnet", "addview", str(VIEWS / source), "--language", lang])
        out = addview.run_benchmark(couch, cfg)
        s = out.results["summary"]
        assert s["ok"] is True, (lang, s["error"])
        rows[lang] = s["rows"]
        saved = results.read_results(out.path)
        ps = saved["pidstat"]
        # the container's processes, not docker-proxy: beam always, and the language's query server
        assert ps["note"] is None, (lang, ps["note"])
        assert "docker-proxy" not in ps["summary"]
        assert ps["summary"]["beam"]["processes"] >= 1 and ps["summary"]["beam"]["intervals"] >= 1
        if fam is not None:
            assert fam in ps["summary"], (lang, sorted(ps["summary"]))
            assert ps["summary"][fam]["intervals"] >= 1
        DOCKER_REPORT.append(f"{lang}: {s['rows']} rows in {s['wall_time_s'] or 0:.1f} s inside {IMAGE}; "
                             "CPU avg " + ", ".join(f"{k} {v['cpu_pct']['avg'] or 0:.0f}%"
                                                     for k, v in sorted(ps["summary"].items())))
        assert saved["pidstat_scope"]["root_pid"] == c.containers.get(dk.container_name(port)).attrs["State"]["Pid"]
    assert rows.pop("ceiling") == N_DOCS, "the ceiling emits one row per document"
    assert len(set(rows.values())) == 1 and rows["javascript"] > 0, rows


def test_tmpfs_in_a_container_and_down_leaves_nothing(engine, tmp_path):
    env = couch_env(tmp_path, SECRET)
    port = _free_port()
    _up(env, port, "--storage", "tmpfs", "--data-size", "64m")
    try:
        container = engine.containers.get(dk.container_name(port))
        assert dk.DATA_PATH in container.attrs["HostConfig"]["Tmpfs"]
        mounts = container.exec_run(["sh", "-c", f"grep ' {dk.DATA_PATH} ' /proc/mounts"]).output.decode()
        assert mounts.split()[2] == "tmpfs"
        couch = connect(f"http://admin:{SECRET}@127.0.0.1:{port}")
        couch.put(db_path("tmpfs_db"))
        couch.post(f"{db_path('tmpfs_db')}/_bulk_docs", {"docs": [{"n": i} for i in range(50)]})
        assert couch.get(db_path("tmpfs_db"))["doc_count"] == 50
    finally:
        _down_leaves_nothing(engine, env, port)


def _up_with_data(tmp_path, count: int) -> tuple[dict, int, Path]:
    """A container `couch up` made, on a free port, and `count` declarations to import into it."""
    env = couch_env(tmp_path, SECRET)
    port = _free_port()
    _up(env, port)
    data = tmp_path / "docs.jsonl"
    data.write_text("".join(json.dumps(d) + "\n" for d in normalised_declarations(count, 11)))
    return env, port, data


def test_the_container_gets_its_own_limits_back_when_the_last_scenario_ran_to_the_end(engine, tmp_path):
    """--memory 512m,1g without an OOM kill: the container the bench recreated for its last scenario is
    replaced by one with the limits `couch up` gave it (none), not left at 1 GiB."""
    from dragnet.bench import run as b
    from dragnet.axes.scenario import Scenario

    env, port, data = _up_with_data(tmp_path, 100)
    mib = 1024**2
    try:
        cfg = b.BenchConfig(url=f"http://admin:{SECRET}@127.0.0.1:{port}", db="scen", languages=["javascript"],
                            repeat=1, data=str(data), results_dir=str(tmp_path / "res"), baseline=False,
                            scenarios=[Scenario(512 * mib), Scenario(1024 * mib)], ceiling=False)
        manifest = b.Bench(cfg, env=env).run()
        assert [r["status"] for r in manifest["runs"]] == ["ok", "ok"], manifest["runs"]
        back = engine.containers.get(dk.container_name(port))
        assert back.status == "running" and back.attrs["HostConfig"]["Memory"] == 0
    finally:
        _down_leaves_nothing(engine, env, port)


def test_bench_scenarios_recreate_the_container_with_its_limits_and_report_an_oom_kill(engine, tmp_path):
    """--memory 256m with hdd-150iops and a cold cache, then --memory 48m, on a container `couch up` made:
    each scenario's container holds its limits (the engine's HostConfig and the kernel's cgroup, read
    here during the build), the tiny limit is reported as an OOM kill, and the container gets its own
    limits back after the bench."""
    from dragnet.bench import run as b
    from dragnet.couchdb import limits as limits
    from dragnet.axes.scenario import Scenario

    if os.geteuid() != 0:
        pytest.skip("a cold cache drops the host's page cache: needs root")
    env, port, data = _up_with_data(tmp_path, 400)
    mib = 1024**2
    try:
        seen: list[dict] = []

        def build(*args, **kw):
            ct = engine.containers.get(dk.container_name(port))
            dirs = dk.cgroup_dirs(Path(f"/proc/{ct.attrs['State']['Pid']}/cgroup").read_text())
            mem = dirs["memory"] / ("memory.limit_in_bytes" if (dirs["memory"] / "memory.limit_in_bytes").exists()
                                    else "memory.max")
            seen.append({"host_config": ct.attrs["HostConfig"], "cgroup_memory": int(mem.read_text())})
            return b.default_build(*args, **kw)

        hdd = limits.PROFILES["hdd-150iops"]
        cfg = b.BenchConfig(url=f"http://admin:{SECRET}@127.0.0.1:{port}", db="scen", languages=["erlang_baseline"],
                            repeat=1, data=str(data), results_dir=str(tmp_path / "res"),
                            scenarios=[Scenario(256 * mib, hdd, "cold"), Scenario(48 * mib)], ceiling=False)
        manifest = b.Bench(cfg, build=build, env=env).run()
        ok, oom = manifest["runs"]
        assert ok["status"] == "ok", ok["error"]
        # the first scenario's container: memory honoured by the engine and the kernel, the read throttle set
        hc = seen[0]["host_config"]
        assert hc["Memory"] == hc["MemorySwap"] == 256 * mib
        assert seen[0]["cgroup_memory"] == 256 * mib
        assert [d["Rate"] for d in hc["BlkioDeviceReadIOps"]] == [150]
        res = json.loads((Path(cfg.results_dir) / ok["result_file"]).read_text())
        dev = res["scenario"]["device"]
        assert hc["BlkioDeviceReadIOps"][0]["Path"] == f"/dev/{dev['name']}" and res["iostat"]["device"] == dev["name"]
        assert res["scenario"]["cache_state"].startswith("dropped")
        assert 0 < res["memory"]["peak"] <= 256 * mib and res["memory"]["oom_kills"] == 0
        # the cold cache made the container read the database from the throttled disk
        assert res["iostat"]["cgroup"]["read_ios"] > 0
        # the tiny limit: OOM-killed, said so, never a plain failure (while starting or during the build)
        assert oom["status"] == "oom" and oom["error"].startswith("CouchDB was OOM-killed at limit 48.0 MiB")
        res48 = json.loads((Path(cfg.results_dir) / oom["result_file"]).read_text())
        assert res48["summary"]["oom_killed"] is True
        assert res48["summary"]["outcome"] == "CouchDB was OOM-killed at limit 48.0 MiB"
        # the container `couch up` made has its own limits again
        back = engine.containers.get(dk.container_name(port))
        assert back.status == "running"
        assert back.attrs["HostConfig"]["Memory"] == 0 and not back.attrs["HostConfig"]["BlkioDeviceReadIOps"]
        saved = "".join(p.read_text() for p in Path(cfg.results_dir).glob("*.json"))
        assert SECRET not in saved
        DOCKER_REPORT.append(f"scenarios: 256 MiB/hdd-150iops/cold peak {res['memory']['peak'] / mib:.0f} MiB, "
                             f"{res['iostat']['cgroup']['read_ios']} reads by the container; 48 MiB: {oom['error']}")
    finally:
        _down_leaves_nothing(engine, env, port)
