"""The Nouveau server in its own container beside a CouchDB container (couch up --backend docker --nouveau):
one index built through it, then everything dragnet made removed by `couch down`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from dragnet.cli import main
from tests.conftest import couch_env

REPO = Path(__file__).resolve().parents[1]
TARBALLS = REPO.parent / "shared" / "nouveau"


@pytest.mark.docker
def test_couch_up_docker_nouveau_builds_an_index_and_down_removes_it(engine, tmp_path):
    import os
    import socket

    from docker.errors import ImageNotFound

    from dragnet.couchdb import search_server_docker as nd

    if not TARBALLS.is_dir():
        pytest.skip("no ../shared/nouveau")
    try:
        engine.images.get(nd.BASE)
    except ImageNotFound:
        pytest.skip(f"the engine has no {nd.BASE} to build the Java image from")
    env = couch_env(tmp_path, "pw-" + os.urandom(6).hex())
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    runner = CliRunner()
    r = runner.invoke(main, ["couch", "up", "--backend", "docker", "--image", os.environ["DRAGNET_TEST_DOCKER_IMAGE"],
                             "--port", str(port), "--nouveau", "--nouveau-heap", "256m", "--timeout", "600",
                             "--json"], env=env)
    try:
        assert r.exit_code == 0, r.output
        report = json.loads(r.output[r.output.index("{"):])
        assert report["nouveau"]["url"] == f"http://{nd.container_name(port)}:5987"
        labels = {c.name: c.labels for c in engine.containers.list(filters={"label": f"org.dragnet.couch.port={port}"})}
        assert set(labels) == {f"dragnet-couchdb-{port}", nd.container_name(port)}
        url = f"http://admin:{env['COUCHDB_PASSWORD']}@127.0.0.1:{port}"
        data = tmp_path / "d.jsonl"
        data.write_text("".join(json.dumps({"_id": f"doc{i}", "step_0": {"declarationType": "1"},
                                            "step_1": {"lastname": "Іваненко", "firstname": "Петро",
                                                       "middlename": "X"}}) + "\n" for i in range(50)))
        r = runner.invoke(main, ["import", str(data), "--url", url, "--db", "d"], env=env)
        assert r.exit_code == 0, r.output
        r = runner.invoke(main, ["addview", "--benchmark", "--nouveau", str(REPO / "docs/studies/nouveau/declarations.js"),
                                 "--url", url, "--db", "d", "--query", "type:1", "--results", str(tmp_path / "r"),
                                 "--timeout", "600", "--json"], env=env)
        assert r.exit_code == 0, r.output
        res = json.loads(r.output)
        assert res["summary"]["num_docs"] == 50 and res["answers"][0]["total_hits"] == 50
        assert res["split"]["jvm_cpu_s"] is not None and "beam.smp" in res["cpu"]["couchdb"]["by_process"]
    finally:
        r = runner.invoke(main, ["couch", "down", "--port", str(port), "--purge"], env=env)
    assert r.exit_code == 0, r.output
    assert not engine.containers.list(all=True, filters={"label": f"org.dragnet.couch.port={port}"})
    assert not engine.networks.list(names=[nd.network_name(port)])
