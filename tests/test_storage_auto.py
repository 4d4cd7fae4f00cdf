"""--storage auto: the backend's recorded state wins over the filesystem of the configured database_dir."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from loopback import Loopback

from dragnet.couchdb import control as ctl
from dragnet.index.addview import detect_storage
from dragnet.couchdb.client import connect


@pytest.fixture()
def couch_on_disk_dir(tmp_path):
    """A loopback 'CouchDB' whose database_dir is a directory on this disk (not tmpfs)."""
    data = tmp_path / "data"
    data.mkdir()
    script = {("GET", "/_node/_local/_config/couchdb/database_dir"): [(200, {}, str(data))]}
    with Loopback(script) as lb:
        yield lb


def _record(lb, tmp_path, **kw) -> dict:
    env = {"DRAGNET_STATE_DIR": str(tmp_path / "state")}
    ctl.save_state(ctl.Instance(port=urlsplit(lb.url).port, **kw), env)
    return env


def test_without_state_the_database_dir_decides(couch_on_disk_dir, tmp_path):
    env = {"DRAGNET_STATE_DIR": str(tmp_path / "state")}
    assert detect_storage(connect(couch_on_disk_dir.url), "auto", env) == "disk"


def test_a_docker_tmpfs_instance_is_tmpfs_whatever_the_host_path_says(couch_on_disk_dir, tmp_path):
    # the container's database_dir is a path inside the container; here it exists on the host's disk
    env = _record(couch_on_disk_dir, tmp_path, backend="docker", storage="tmpfs", container="c0ffee")
    assert detect_storage(connect(couch_on_disk_dir.url), "auto", env) == "tmpfs"


def test_a_local_disk_instance_is_disk(tmp_path):
    shm = tmp_path  # the configured dir is on tmpfs, the recorded state says disk: the state wins
    script = {("GET", "/_node/_local/_config/couchdb/database_dir"): [(200, {}, "/dev/shm")]}
    with Loopback(script) as lb:
        env = _record(lb, shm, backend="local", storage="disk", data_dir=str(tmp_path))
        assert detect_storage(connect(lb.url), "auto", env) == "disk"
        assert not lb.requests("GET", "/_node/_local/_config/couchdb/database_dir")   # no guessing asked


def test_a_given_label_is_kept(couch_on_disk_dir, tmp_path):
    env = _record(couch_on_disk_dir, tmp_path, backend="docker", storage="tmpfs")
    assert detect_storage(connect(couch_on_disk_dir.url), "disk", env) == "disk"
