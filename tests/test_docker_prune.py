"""Docker: `dragnet couch prune` lists, then removes, the containers, volumes and networks with dragnet's
labels, and nothing else. Every test scopes it with --port to objects it made itself (the engine is shared)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parent.parent
IMAGE = "couchdb:3.5.0-trixie"


@pytest.fixture()
def engine():
    try:
        from dragnet.couchdb.docker import client

        c = client()
        c.images.get(IMAGE)
    except Exception as exc:
        pytest.skip(f"needs a Docker engine with {IMAGE}: {exc}")
    return c


def _prune(tmp_path, *args):
    env = {**os.environ, "DRAGNET_STATE_DIR": str(tmp_path / "state"), "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "dragnet", "couch", "prune", *args], env=env,
                          capture_output=True, text=True, timeout=300)


def _exists(getter, key) -> bool:
    from docker.errors import NotFound

    try:
        getter(key)
        return True
    except NotFound:
        return False


def test_prune_removes_only_labelled_objects_and_lists_them_first(engine, tmp_path):
    from tests.conftest import free_port

    from dragnet.couchdb.docker import LABEL, volume_name

    c = engine
    port, other = free_port(), free_port()
    mine = {LABEL: str(port)}
    tag = f"dragnet-test-prune-{port}"
    made = {"containers": [], "volumes": [], "networks": []}
    try:
        stopped = c.containers.create(IMAGE, command=["true"], entrypoint=[], name=f"{tag}-stopped", labels=mine)
        made["containers"].append(stopped.id)
        running = c.containers.run(IMAGE, ["300"], entrypoint=["sleep"], detach=True, name=f"{tag}-running",
                                   labels=mine)
        made["containers"].append(running.id)
        vol = c.volumes.create(name=f"{tag}-vol", labels=mine)
        net = c.networks.create(f"{tag}-net", labels=mine)
        bare = c.volumes.create(name=volume_name(port))            # dragnet's name, no label: never touched
        elsewhere = c.volumes.create(name=f"{tag}-other", labels={LABEL: str(other)})   # another port's
        made["volumes"] += [vol.name, bare.name, elsewhere.name]
        made["networks"].append(net.id)

        p = _prune(tmp_path, "--port", str(port), "--dry-run")
        assert p.returncode == 0, p.stderr
        assert _exists(c.containers.get, stopped.id) and _exists(c.volumes.get, vol.name)

        p = _prune(tmp_path, "--port", str(port))
        assert p.returncode == 0, p.stderr
        out = p.stdout
        listed = [f"container {tag}-stopped", f"container {tag}-running", f"volume {tag}-vol", f"network {tag}-net"]
        assert all(x in out for x in listed) and max(out.index(x) for x in listed) < out.index("removed 3, kept 1")
        assert "running (another bench may use it)" in out
        assert not _exists(c.containers.get, stopped.id) and not _exists(c.volumes.get, vol.name)
        assert not _exists(c.networks.get, net.id)
        assert _exists(c.containers.get, running.id)
        assert _exists(c.volumes.get, bare.name) and _exists(c.volumes.get, elsewhere.name)
        assert volume_name(port) not in out and f"{tag}-other" not in out

        p = _prune(tmp_path, "--port", str(port), "--running", "--json")
        assert p.returncode == 0, p.stderr
        (obj,) = json.loads(p.stdout)["objects"]
        assert (obj["kind"], obj["name"], obj["removed"]) == ("container", f"{tag}-running", True)
        assert not _exists(c.containers.get, running.id)
    finally:
        from docker.errors import NotFound

        for cid in made["containers"]:
            try:
                c.containers.get(cid).remove(force=True, v=True)
            except NotFound:
                pass
        for nid in made["networks"]:
            try:
                c.networks.get(nid).remove()
            except NotFound:
                pass
        for name in made["volumes"]:
            try:
                c.volumes.get(name).remove()
            except NotFound:
                pass


def test_prune_keeps_the_objects_of_a_couchdb_couch_up_recorded(engine, tmp_path):
    from tests.conftest import free_port

    from dragnet.couchdb.docker import volume_name

    port = free_port()
    env = {**os.environ, "DRAGNET_STATE_DIR": str(tmp_path / "state"), "PYTHONPATH": str(ROOT),
           "COUCHDB_USER": "admin", "COUCHDB_PASSWORD": "prune-test"}

    def dragnet(*args):
        return subprocess.run([sys.executable, "-m", "dragnet", "couch", *args], env=env, capture_output=True,
                              text=True, timeout=300)

    p = dragnet("up", "--backend", "docker", "--image", IMAGE, "--port", str(port))
    assert p.returncode == 0, p.stdout + p.stderr
    try:
        p = dragnet("prune", "--port", str(port), "--running")
        assert p.returncode == 0 and "removed 0, kept 2" in p.stdout, p.stdout + p.stderr
        assert f"`dragnet couch down --port {port} --purge` removes it" in p.stdout
        assert dragnet("status", "--port", str(port)).stdout.count("up, CouchDB 3.5.0") == 1
    finally:
        p = dragnet("down", "--port", str(port), "--purge")
    assert p.returncode == 0, p.stdout + p.stderr
    assert not _exists(engine.volumes.get, volume_name(port))
