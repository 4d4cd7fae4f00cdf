"""`dragnet couch` docker backend: container settings, and the real Docker SDK's behaviour here.

No Docker engine runs in CI: the "no engine" path is tested with the real SDK; tests that need an
engine skip without one.
"""

from __future__ import annotations

import json
import os
import socket
import stat

import pytest
from click.testing import CliRunner

from dragnet.couchdb import control as ctl
from dragnet.couchdb import docker as dk
from dragnet.couchdb import image_build as image_build
from dragnet.couchdb import limits as limits
from dragnet.couchdb import storage as storage
from dragnet.cli import main
from dragnet.errors import DragnetError, UsageError
from dragnet.couchdb.storage import BlockDevice
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


def no_engine(test):
    """Runs only where no engine answers: .ci/run has a phase for these (`-m no_engine`, DOCKER_HOST dead)."""
    return pytest.mark.no_engine(pytest.mark.skipif(ENGINE, reason="a Docker engine answers here")(test))


def needs_engine(test):
    return pytest.mark.docker(pytest.mark.skipif(not ENGINE, reason="no Docker engine")(test))


@pytest.fixture()
def env(tmp_path) -> dict:
    return couch_env(tmp_path, SECRET)




def test_settings_disk_volume_and_credentials_only_in_environment():
    kw = dk.container_settings(image="img:1", port=15984, user="admin", password=SECRET)
    assert kw["environment"] == {"COUCHDB_USER": "admin", "COUCHDB_PASSWORD": SECRET, "ERL_FLAGS": "+JPperf true"}
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
    assert kw["environment"] == {"COUCHDB_USER": "admin", "COUCHDB_PASSWORD": SECRET, "ERL_FLAGS": "+JPperf true",
                                 "NODENAME": "n15985.dragnet", "COUCHDB_SECRET": "S3cret-chttpd",
                                 "COUCHDB_ERLANG_COOKIE": "C00kie-erl", "COUCHDB_SINGLE_NODE": "false"}
    rest = json.dumps({k: v for k, v in kw.items() if k != "environment"})
    assert not {SECRET, "S3cret-chttpd", "C00kie-erl"} & set(rest.split('"'))
    assert kw["network"] == member.network and kw["hostname"] == "n15985.dragnet"
    assert kw["networking_config"] == {member.network: {"Aliases": ["n15985.dragnet"]}}
    assert kw["ports"] == {"5984/tcp": ("127.0.0.1", 15985)}   # published on loopback only


def test_docker_cluster_plan_names_nodes_by_their_network_alias():
    from dragnet.couchdb import cluster as cluster

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
    # the engine this environment names (CI's no-engine phase points DOCKER_HOST at a socket nobody serves)
    with pytest.raises(DragnetError) as err:
        dk.client(dict(os.environ))
    msg = str(err.value)
    assert msg.startswith(f"cannot connect to the Docker engine at {dk.docker_host(dict(os.environ))}: "
                          "is Docker running?")
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
    bundle = tmp_path / "ca.pem"
    bundle.write_text(_pem("PROXYCAONLY"))
    kw, settings = dk.build_options({dk.CA_ENV: str(bundle), dk.NETWORK_ENV: "bridge"})
    assert kw == {"buildargs": {"PIP_EXTRA_CA": _pem("PROXYCAONLY")}, "network_mode": "bridge"}
    assert settings == image_build.Settings("bridge", str(bundle), ca_auto=False, ca_certificates=1)
    (tmp_path / "bad.pem").write_text("not a certificate")
    with pytest.raises(UsageError, match=r"bad.pem: not a PEM"):
        dk.build_options({dk.CA_ENV: str(tmp_path / "bad.pem")})
    with pytest.raises(UsageError, match=r"missing.pem: cannot read"):
        dk.build_options({dk.CA_ENV: str(tmp_path / "missing.pem")})
    (tmp_path / "big.pem").write_text(_pem("X" * (dk.MAX_BUILD_ARG + 10)))
    with pytest.raises(UsageError, match="at most"):
        dk.build_options({dk.CA_ENV: str(tmp_path / "big.pem")})


def test_build_options_default_to_the_hosts_network_and_ca_bundle(tmp_path):
    bundle = tmp_path / "ca.pem"
    bundle.write_text(_pem("PROXYCAONLY"))
    missing = str(tmp_path / "none-here.pem")
    kw, settings = dk.build_options({}, host_bundles=(missing, str(bundle)))
    assert kw == {"network_mode": "host", "buildargs": {"PIP_EXTRA_CA": _pem("PROXYCAONLY")}}
    assert settings == image_build.Settings("host", str(bundle), ca_auto=True, ca_certificates=1)
    # `none` turns the CA off; a host bundle of no use is skipped, not an error the user never asked for
    assert dk.build_options({dk.CA_ENV: "none"}, host_bundles=(str(bundle),)) == (
        {"network_mode": "host"}, image_build.Settings("host", None))
    (tmp_path / "big.pem").write_text(_pem("X" * (dk.MAX_BUILD_ARG + 10)))
    assert dk.build_options({}, host_bundles=(str(tmp_path / "big.pem"),)) == (
        {"network_mode": "host"}, image_build.Settings("host", None))
    assert dk.build_options({}, host_bundles=(missing,))[1].ca_bundle is None


# --- scenario limits as container settings (pure) ------------------------------------------------------

VDA = BlockDevice("vda", 254, 0, "disk")
MIB = 1024**2


def test_limit_settings_memory_cannot_swap_and_the_profile_throttles_the_data_disk():
    kw = dk.limit_settings(limits.Limits(256 * MIB, limits.PROFILES["hdd-150iops"], VDA), "/dev/vda")
    assert kw == {"mem_limit": 256 * MIB, "memswap_limit": 256 * MIB,
                  "device_read_iops": [{"Path": "/dev/vda", "Rate": 150}],
                  "device_write_iops": [{"Path": "/dev/vda", "Rate": 150}],
                  "device_read_bps": [{"Path": "/dev/vda", "Rate": 120 * MIB}],
                  "device_write_bps": [{"Path": "/dev/vda", "Rate": 120 * MIB}]}
    # a custom profile sets only what it limits; the reference scenario sets nothing
    assert dk.limit_settings(limits.Limits(None, limits.parse_profile("150:0:0:0"), VDA), "/dev/vda") == {
        "device_read_iops": [{"Path": "/dev/vda", "Rate": 150}]}
    assert dk.limit_settings(limits.Limits()) == {}
    with pytest.raises(DragnetError, match="hdd-150iops: no device node"):
        dk.limit_settings(limits.Limits(None, limits.PROFILES["hdd-150iops"], VDA), None)


def test_scenario_limits_replace_the_instance_memory_and_are_refused_on_tmpfs():
    base = dict(image="i", port=1, user="u", password="p", memory=2 * 1024**3)
    assert dk.container_settings(**base)["mem_limit"] == 2 * 1024**3
    # mem-unlimited means unlimited, whatever `couch up --memory` said
    assert "mem_limit" not in dk.container_settings(**base, limits={})
    lim = dk.limit_settings(limits.Limits(64 * MIB, limits.PROFILES["san-600iops"], VDA), "/dev/vda")
    kw = dk.container_settings(**base, limits=lim)
    assert (kw["mem_limit"], kw["memswap_limit"]) == (64 * MIB, 64 * MIB)
    assert kw["device_read_iops"] == [{"Path": "/dev/vda", "Rate": 600}]
    assert kw["volumes"] == {"dragnet-couchdb-1-data": {"bind": "/opt/couchdb/data", "mode": "rw"}}
    with pytest.raises(UsageError, match="no disk to throttle"):
        dk.container_settings(**base, storage_kind="tmpfs", limits=lim)
    tmpfs = dk.container_settings(**base, storage_kind="tmpfs", limits={"mem_limit": MIB, "memswap_limit": MIB})
    assert tmpfs["mem_limit"] == MIB and "tmpfs" in tmpfs


def test_limits_not_applied_names_what_the_engine_dropped():
    lim = dk.limit_settings(limits.Limits(64 * MIB, limits.parse_profile("150:0:0:0"), VDA), "/dev/vda")
    held = {"Memory": 64 * MIB, "MemorySwap": 64 * MIB, "BlkioDeviceReadIOps": [{"Path": "/dev/vda", "Rate": 150}]}
    assert dk.limits_not_applied(lim, held) == []
    # an engine without blkio support keeps the container and drops the throttle with a warning
    dropped = {**held, "BlkioDeviceReadIOps": [], "MemorySwap": 128 * MIB}
    assert dk.limits_not_applied(lim, dropped) == [
        f"memswap_limit={64 * MIB} (HostConfig.MemorySwap is {128 * MIB})",
        "device_read_iops=[{'Path': '/dev/vda', 'Rate': 150}] (HostConfig.BlkioDeviceReadIOps is [])"]


def test_cgroup_dirs_of_a_container_process_v1_and_v2(tmp_path):
    cid = "4efa87a985a5"
    v1 = (f"12:blkio:/docker/{cid}\n11:cpu,cpuacct:/docker/{cid}\n9:memory:/docker/{cid}\n"
          f"1:name=systemd:/docker/{cid}\n0::/docker/{cid}\n")
    assert dk.cgroup_dirs(v1, tmp_path) == {"memory": tmp_path / "memory" / "docker" / cid,
                                            "blkio": tmp_path / "blkio" / "docker" / cid}
    v2 = f"0::/system.slice/docker-{cid}.scope\n"
    scope = tmp_path / "system.slice" / f"docker-{cid}.scope"
    assert dk.cgroup_dirs(v2, tmp_path) == {"memory": scope, "blkio": scope}


def test_device_node_must_be_the_disk_itself(tmp_path):
    with pytest.raises(DragnetError, match="no device node .*/vda for vda .254:0."):
        dk.device_node(VDA, str(tmp_path))
    (tmp_path / "vda").write_text("")
    with pytest.raises(DragnetError, match="is not block device 254:0"):
        dk.device_node(VDA, str(tmp_path))
    try:
        os.mknod(tmp_path / "vdb", stat.S_IFBLK | 0o600, os.makedev(254, 16))
    except (PermissionError, OSError):
        pytest.skip("cannot make device nodes here (not root)")
    assert dk.device_node(BlockDevice("vdb", 254, 16, "disk"), str(tmp_path)) == str(tmp_path / "vdb")
    (tmp_path / "vda").unlink()
    os.mknod(tmp_path / "vda", stat.S_IFBLK | 0o600, os.makedev(254, 16))   # a node for another disk
    with pytest.raises(DragnetError, match="is not block device 254:0"):
        dk.device_node(VDA, str(tmp_path))


def test_memcg_of_names_the_containers_memory_group_as_oom_reports_do():
    v1 = ("12:blkio:/docker/23ba58ac\n11:cpu,cpuacct:/docker/23ba58ac\n"
          "9:memory:/docker/23ba58ac\n1:name=systemd:/docker/23ba58ac\n0::/system.slice/containerd.service\n")
    assert dk.memcg_of(v1) == "/docker/23ba58ac"
    assert dk.memcg_of("0::/system.slice/docker-23ba58ac.scope\n") == "/system.slice/docker-23ba58ac.scope"
    assert dk.memcg_of("") is None


class _Container:
    """What raise_if_oom_killed reads of a docker SDK container: attrs["State"] after each reload()."""

    def __init__(self, states):
        self.states, self.reloads = list(states), 0

    def reload(self):
        self.reloads += 1

    @property
    def attrs(self):
        return {"State": self.states[min(self.reloads, len(self.states)) - 1]}


def test_a_container_killed_on_its_first_requests_is_an_oom_kill_not_unreachable():
    pytest.importorskip("docker")
    # the connection drops while the engine still shows it running; the OOM flag follows
    c = _Container([{"Status": "running", "OOMKilled": False}, {"Status": "exited", "OOMKilled": True}])
    with pytest.raises(dk.ContainerOOMKilled, match="OOM-killed at limit 48.0 MiB while starting"):
        dk.raise_if_oom_killed(c, 48 * 1024**2, settle=5, interval=0.01)
    # a container that exited for another reason, or is still running after the settle time: not ours to name
    dk.raise_if_oom_killed(_Container([{"Status": "exited", "OOMKilled": False}]), 48 * 1024**2, interval=0.01)
    alive = _Container([{"Status": "running", "OOMKilled": False}])
    dk.raise_if_oom_killed(alive, 48 * 1024**2, settle=0.05, interval=0.01)
    assert alive.reloads >= 2
