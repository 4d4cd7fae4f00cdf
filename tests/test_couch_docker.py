"""`dragnet couch` docker backend: container settings, and the real Docker SDK's behaviour here.

No Docker engine runs in CI: the "no engine" path is tested with the real SDK; tests that need an
engine skip without one.
"""

from __future__ import annotations

import json
import socket

import pytest
from click.testing import CliRunner

from dragnet import couchdb_control as ctl
from dragnet import couchdb_docker as dk
from dragnet import storage
from dragnet.cli import main
from dragnet.errors import DragnetError, UsageError
from conftest import couch_env, free_port

SECRET = "d0cker-Secret-pw"


def _engine_answers() -> bool:
    import docker

    try:
        docker.from_env().ping()
        return True
    except Exception:
        return False


ENGINE = _engine_answers()
no_engine = pytest.mark.skipif(ENGINE, reason="a Docker engine answers here")


def needs_engine(test):
    return pytest.mark.docker(pytest.mark.skipif(not ENGINE, reason="no Docker engine")(test))


@pytest.fixture()
def env(tmp_path) -> dict:
    return couch_env(tmp_path, SECRET)




def test_settings_disk_volume_and_credentials_only_in_environment():
    kw = dk.container_settings(image="img:1", port=15984, user="admin", password=SECRET)
    assert kw["environment"] == {"COUCHDB_USER": "admin", "COUCHDB_PASSWORD": SECRET}
    assert not {"command", "entrypoint"} & set(kw)
    without_env = json.dumps({k: v for k, v in kw.items() if k != "environment"})
    assert SECRET not in without_env
    assert kw["ports"] == {"5984/tcp": ("127.0.0.1", 15984)}
    assert kw["volumes"] == {"dragnet-couchdb-15984-data": {"bind": "/opt/couchdb/data", "mode": "rw"}}
    assert kw["name"] == "dragnet-couchdb-15984" and kw["labels"] == {dk.LABEL: "15984"}
    assert "tmpfs" not in kw and "nano_cpus" not in kw and "mem_limit" not in kw


def test_settings_of_a_cluster_node_keep_its_secrets_in_the_environment():
    member = dk.ClusterMember(network="dragnet-couchdb-15984-net", secret="S3cret-chttpd", cookie="C00kie-erl")
    kw = dk.container_settings(image="i", port=15985, user="admin", password=SECRET, member=member)
    assert kw["environment"] == {"COUCHDB_USER": "admin", "COUCHDB_PASSWORD": SECRET,
                                 "NODENAME": "n15985.dragnet", "COUCHDB_SECRET": "S3cret-chttpd",
                                 "COUCHDB_ERLANG_COOKIE": "C00kie-erl", "COUCHDB_SINGLE_NODE": "false"}
    rest = json.dumps({k: v for k, v in kw.items() if k != "environment"})
    assert not {SECRET, "S3cret-chttpd", "C00kie-erl"} & set(rest.split('"'))
    assert kw["network"] == member.network and kw["hostname"] == "n15985.dragnet"
    assert kw["networking_config"] == {member.network: {"Aliases": ["n15985.dragnet"]}}
    assert kw["ports"] == {"5984/tcp": ("127.0.0.1", 15985)}   # published on loopback only


def test_docker_cluster_plan_names_nodes_by_their_network_alias():
    from dragnet import cluster

    nodes = cluster.plan(3, 16000, "docker")
    assert [(n.port, n.name) for n in nodes] == [(16000, "couchdb@n16000.dragnet"),
                                                 (16001, "couchdb@n16001.dragnet"),
                                                 (16002, "couchdb@n16002.dragnet")]
    assert dk.network_name(16000) == "dragnet-couchdb-16000-net"


def test_settings_host_dir_limits_and_tmpfs(tmp_path):
    kw = dk.container_settings(image="i", port=1, user="u", password="p", data_dir=str(tmp_path / "d"),
                               cpus=1.5, memory=2 * 1024**3)
    assert kw["volumes"] == {str(tmp_path / "d"): {"bind": "/opt/couchdb/data", "mode": "rw"}}
    assert kw["nano_cpus"] == 1_500_000_000 and kw["mem_limit"] == 2 * 1024**3
    kw = dk.container_settings(image="i", port=1, user="u", password="p", storage_kind="tmpfs",
                               data_size=1024**3)
    assert "volumes" not in kw
    assert kw["tmpfs"] == {"/opt/couchdb/data": f"mode=0777,size={1024**3 + storage.DEFAULT_RESERVE}"}
    kw = dk.container_settings(image="i", port=1, user="u", password="p", storage_kind="tmpfs")
    assert kw["tmpfs"] == {"/opt/couchdb/data": "mode=0777"}


def test_settings_refuse_bad_combinations(tmp_path):
    with pytest.raises(UsageError, match="--data-dir with --storage tmpfs"):
        dk.container_settings(image="i", port=1, user="u", password="p", storage_kind="tmpfs",
                              data_dir=str(tmp_path))
    with pytest.raises(UsageError, match="--cpus 0: must be positive"):
        dk.container_settings(image="i", port=1, user="u", password="p", cpus=0)
    with pytest.raises(UsageError, match="expected disk or tmpfs"):
        dk.container_settings(image="i", port=1, user="u", password="p", storage_kind="ssd")


def test_tmpfs_must_fit_the_memory_limit_and_the_host():
    gib = 1024**3
    dk.check_tmpfs_fits(gib, 4 * gib, env={})
    with pytest.raises(DragnetError, match="would not fit in free memory"):
        dk.check_tmpfs_fits(4 * gib, 4 * gib, env={})
    with pytest.raises(DragnetError, match="would not fit in free memory"):
        dk.check_tmpfs_fits(storage.available_memory(), None, env={})
    # a remote engine's memory is not this machine's: only the container limit is checked
    dk.check_tmpfs_fits(storage.available_memory(), None, env={"DOCKER_HOST": "tcp://10.0.0.1:2375"})


@no_engine
def test_no_engine_error_with_the_real_sdk():
    with pytest.raises(DragnetError) as err:
        dk.client({})
    msg = str(err.value)
    assert msg.startswith("cannot connect to the Docker engine at unix:///var/run/docker.sock: is Docker running?")
    assert "--backend local" in msg


def test_unreachable_docker_host_is_named():
    port = free_port()
    with pytest.raises(DragnetError, match=rf"cannot connect to the Docker engine at tcp://127.0.0.1:{port}: "):
        dk.client({"DOCKER_HOST": f"tcp://127.0.0.1:{port}"})


@no_engine
def test_cli_up_without_engine_says_what_to_do_and_leaves_no_state(env):
    result = CliRunner().invoke(main, ["couch", "up", "--port", str(free_port())], env=env)
    assert result.exit_code == 1
    assert "dragnet: error: cannot connect to the Docker engine" in result.output
    assert SECRET not in result.output
    assert ctl.list_states(env) == []


def test_up_checks_the_port_before_the_engine(env):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        with pytest.raises(DragnetError, match="already in use"):
            dk.up(port=s.getsockname()[1], env=env)


def test_up_needs_an_admin(env):
    del env["COUCHDB_PASSWORD"]
    with pytest.raises(UsageError, match="set COUCHDB_PASSWORD"):
        dk.up(port=free_port(), env=env)


@no_engine
def test_status_of_a_recorded_container_without_engine(env):
    inst = ctl.Instance(backend="docker", port=free_port(), user="admin", container="abc123",
                        container_name="dragnet-couchdb-x", image=dk.DEFAULT_IMAGE, volume="v")
    ctl.save_state(inst, env)
    result = CliRunner().invoke(main, ["couch", "status", "--json"], env=env)
    assert result.exit_code == 0, result.output
    row = json.loads(result.stdout)["instances"][0]
    assert row["running"] is None and "cannot connect to the Docker engine" in row["error"]
    assert row["url"] == f"http://admin:***@127.0.0.1:{inst.port}" and row["container"] == "abc123"


def test_cli_rejects_options_of_the_other_backend(env, tmp_path):
    result = CliRunner().invoke(main, ["couch", "up", "--backend", "local", "--image", "x:1"], env=env)
    assert result.exit_code == 2 and "--image applies to --backend docker only" in result.output
    result = CliRunner().invoke(main, ["couch", "up", "--couchdb-home", str(tmp_path)], env=env)
    assert result.exit_code == 2 and "--couchdb-home applies to --backend local only" in result.output


@needs_engine
def test_missing_custom_image_is_reported(env):
    c = dk.client(env)
    with pytest.raises(DragnetError, match="image dragnet/no-such-image:0 not found"):
        dk.ensure_image(c, "dragnet/no-such-image:0", build=False)


def _pem(body: str) -> str:
    return f"-----BEGIN CERTIFICATE-----\n{body}\n-----END CERTIFICATE-----\n"


def test_extra_certificates_keeps_only_what_the_public_bundle_lacks():
    public = _pem("AAAA\nBBBB") + _pem("CCCC")
    bundle = "# system store\n" + _pem("CCCC") + _pem("PROXY\nCA") + _pem("AAAA\r\nBBBB")
    assert dk.extra_certificates(bundle, public) == _pem("PROXY\nCA")
    assert dk.extra_certificates(public, public) == ""


def test_build_options_from_env(tmp_path):
    assert dk.build_options({}) == {}
    bundle = tmp_path / "ca.pem"
    bundle.write_text(_pem("PROXYCAONLY"))
    kw = dk.build_options({dk.CA_ENV: str(bundle), dk.NETWORK_ENV: "host"})
    assert kw == {"buildargs": {"PIP_EXTRA_CA": _pem("PROXYCAONLY")}, "network_mode": "host"}
    (tmp_path / "bad.pem").write_text("not a certificate")
    with pytest.raises(UsageError, match=r"bad.pem: not a PEM"):
        dk.build_options({dk.CA_ENV: str(tmp_path / "bad.pem")})
    with pytest.raises(UsageError, match=r"missing.pem: cannot read"):
        dk.build_options({dk.CA_ENV: str(tmp_path / "missing.pem")})
    (tmp_path / "big.pem").write_text(_pem("X" * (dk.MAX_BUILD_ARG + 10)))
    with pytest.raises(UsageError, match="at most"):
        dk.build_options({dk.CA_ENV: str(tmp_path / "big.pem")})
