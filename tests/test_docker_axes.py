"""Docker: `bench --couchdb couchdb:3.5.0-trixie,couchdb:3.5.2-trixie` builds on both images and records both
versions; an image that is missing or not CouchDB is a one-line error before anything starts."""

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parent.parent
IMAGES = ("couchdb:3.5.0-trixie", "couchdb:3.5.2-trixie")


@pytest.fixture()
def docker_env(tmp_path):
    try:
        from dragnet.couchdb.docker import client

        c = client()
        for image in IMAGES:
            c.images.get(image)
    except Exception as exc:   # no engine or no base images (../shared/docker/make-base-images)
        pytest.skip(f"needs a Docker engine with {', '.join(IMAGES)}: {exc}")
    from tests.conftest import free_port

    port = free_port()
    yield {**os.environ, "COUCHDB_USER": "admin", "COUCHDB_PASSWORD": secrets.token_hex(8),
           "DRAGNET_STATE_DIR": str(tmp_path / "state"), "PYTHONPATH": str(ROOT)}, port
    from docker.errors import NotFound

    from dragnet.couchdb.docker import container_name, volume_name

    for remove in (lambda: c.containers.get(container_name(port)).remove(force=True),
                   lambda: c.volumes.get(volume_name(port)).remove()):
        try:     # what a failed test may have left; the bench itself removes the container
            remove()
        except NotFound:
            pass


def _bench(env, port, tmp_path, *args):
    return subprocess.run([sys.executable, "-m", "dragnet", "bench", "--backend", "docker",
                           "--url", f"http://127.0.0.1:{port}", "--db", "axes", "--results", str(tmp_path / "out"),
                           *args], env=env, capture_output=True, text=True, timeout=900)


def test_couchdb_axis_builds_on_both_images_and_records_two_versions(docker_env, tmp_path):
    from tests.conftest import normalised_declarations

    env, port = docker_env
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({**d, "_id": f"gen:{i}"}) + "\n"
                            for i, d in enumerate(normalised_declarations(100, 4))))
    p = _bench(env, port, tmp_path, "--data", str(data), "--languages", "javascript", "--no-baseline", "--no-ceiling",
               "--repeat", "1", "--couchdb", ",".join(IMAGES))
    assert p.returncode == 0, p.stdout + p.stderr
    m = json.loads((tmp_path / "out" / "bench.json").read_text())
    res = [json.loads((tmp_path / "out" / r["result_file"]).read_text()) for r in m["runs"]]
    assert [r["bench"]["axes"]["couchdb"] for r in res] == list(IMAGES)
    assert [r["couchdb"]["versions"]["couchdb"] for r in res] == ["3.5.0", "3.5.2"]
    from dragnet.couchdb.docker import client

    assert not client().containers.list(all=True, filters={"label": f"org.dragnet.couch.port={port}"})


def test_an_image_that_is_missing_or_not_couchdb_is_refused_up_front(docker_env, tmp_path):
    from dragnet.couchdb.docker import client

    env, port = docker_env
    volumes = {v.name for v in client().volumes.list()}
    for image, why in (("dragnet/no-such-image:0", "no such image"), ("debian:bookworm-slim", "not a CouchDB image")):
        p = _bench(env, port, tmp_path, "--languages", "javascript", "--couchdb", f"{IMAGES[0]},{image}")
        assert p.returncode != 0 and why in p.stderr, p.stderr
        assert len(p.stderr.strip().splitlines()) == 1, p.stderr
        assert not (tmp_path / "out" / "bench.json").exists()
    # reading the images' default.ini left no container and no anonymous volume (the image's VOLUME) behind
    assert {v.name for v in client().volumes.list()} <= volumes


def test_a_restart_setting_turns_on_the_erlang_query_server_of_an_official_image(docker_env, tmp_path):
    """The official images ship the native Erlang query server off, and CouchDB refuses that section over
    HTTP: --config-restart writes it into a local.d file of the recreated container, so the Erlang baseline
    builds; afterwards no container and no file is left."""
    from tests.conftest import normalised_declarations

    env, port = docker_env
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({**d, "_id": f"gen:{i}"}) + "\n"
                            for i, d in enumerate(normalised_declarations(60, 4))))
    p = _bench(env, port, tmp_path, "--data", str(data), "--languages", "javascript", "--repeat", "1", "--no-ceiling",
               "--couchdb", IMAGES[1], "--config-restart", "native_query_servers/enable_erlang_query_server=true")
    assert p.returncode == 0, p.stdout + p.stderr
    m = json.loads((tmp_path / "out" / "bench.json").read_text())
    assert [(r["language"], r["status"]) for r in m["runs"]] == [("erlang_baseline", "ok"), ("javascript", "ok")]
    assert all(r["axes"]["config:native_query_servers/enable_erlang_query_server"] == "true" for r in m["runs"])
    from dragnet.couchdb.docker import client

    assert not client().containers.list(all=True, filters={"label": f"org.dragnet.couch.port={port}"})
    assert not list(Path(env["DRAGNET_STATE_DIR"]).glob("docker-*-restart.ini"))



def _data(tmp_path, n=60):
    from tests.conftest import normalised_declarations

    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({**d, "_id": f"gen:{i}"}) + "\n"
                            for i, d in enumerate(normalised_declarations(n, 4))))
    return data


def test_the_erlang_baseline_builds_on_both_official_images(docker_env, tmp_path):
    """The official images keep the native Erlang query server off; the baseline is dragnet's own, so every
    container dragnet starts has it on (a default.d file bound in), and the manifest says so."""
    env, port = docker_env
    p = _bench(env, port, tmp_path, "--data", str(_data(tmp_path)), "--languages", "erlang_baseline",
               "--repeat", "1", "--no-ceiling", "--couchdb", ",".join(IMAGES))
    assert p.returncode == 0, p.stdout + p.stderr
    m = json.loads((tmp_path / "out" / "bench.json").read_text())
    assert [(r["axes"]["couchdb"], r["language"], r["status"]) for r in m["runs"]] == [
        (IMAGES[0], "erlang_baseline", "ok"), (IMAGES[1], "erlang_baseline", "ok")]
    assert m["erlang_baseline"]["native_server"] == "on" and m["erlang_baseline"]["by"].startswith("dragnet")
    from dragnet.couchdb.docker import client, volume_name

    assert not client().containers.list(all=True, filters={"label": f"org.dragnet.couch.port={port}"})
    # the data volume stays for the next bench on this port, labelled, so `couch prune` finds and removes it
    # (and the node its shards belong to, couchdb@127.0.0.1, which beam's probe reaches)
    assert client().volumes.get(volume_name(port)).attrs["Labels"] == {"org.dragnet.couch.port": str(port),
                                                                       "org.dragnet.couch.node": "couchdb@127.0.0.1"}
    p = subprocess.run([sys.executable, "-m", "dragnet", "couch", "prune", "--port", str(port)], env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and f"volume {volume_name(port)} (port {port})" in p.stdout, p.stdout + p.stderr
    assert not client().volumes.list(filters={"label": f"org.dragnet.couch.port={port}"})


def test_on_a_couchdb_given_by_url_without_the_native_server_the_baseline_is_left_out_in_one_line(docker_env,
                                                                                                   tmp_path):
    from dragnet.couchdb.control import ensure_system_dbs, wait_up
    from dragnet.couchdb.docker import client

    env, port = docker_env
    c = client()
    name = f"dragnet-test-official-{port}"      # started here, not by dragnet: dragnet does not manage it
    container = c.containers.run(IMAGES[0], name=name, detach=True, labels={"org.dragnet.test": str(port)},
                                 environment={"COUCHDB_USER": env["COUCHDB_USER"],
                                              "COUCHDB_PASSWORD": env["COUCHDB_PASSWORD"]},
                                 ports={"5984/tcp": ("127.0.0.1", port)})
    try:
        url = f"http://127.0.0.1:{port}"
        wait_up(url, 120)
        ensure_system_dbs(url, env["COUCHDB_USER"], env["COUCHDB_PASSWORD"])
        argv = [sys.executable, "-m", "dragnet", "bench", "--url", url, "--db", "axes", "--repeat", "1",
                "--data", str(_data(tmp_path)), "--no-ceiling", "--results", str(tmp_path / "out")]
        p = subprocess.run([*argv, "--languages", "javascript"], env=env, capture_output=True, text=True,
                           timeout=900)
        assert p.returncode == 0, p.stdout + p.stderr
        text = p.stdout + p.stderr
        why = f"erlang_baseline is unavailable on http://127.0.0.1:{port}: its native Erlang query server is off"
        assert text.count(why) == 1 and text.index(why) < text.index("[1/1]"), text
        m = json.loads((tmp_path / "out" / "bench.json").read_text())
        assert [(r["language"], r["status"]) for r in m["runs"]] == [("javascript", "ok")]
        assert m["erlang_baseline"]["available"] is False and m["languages"] == ["javascript"]
        # the baseline alone: nothing else to run, refused in one line
        p = subprocess.run([*argv[:-1], str(tmp_path / "out2"), "--languages", "erlang_baseline"], env=env,
                           capture_output=True, text=True, timeout=300)
        assert p.returncode != 0 and "no other language to run" in p.stderr
        assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    finally:
        container.remove(force=True, v=True)
