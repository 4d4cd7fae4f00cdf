"""Building dragnet's image: the default settings, and build failures explained in one line.

The logs under fixtures/docker-build/ are real: docker/Dockerfile built here through build_image() with its
failures provoked (fixtures/docker-build/README.md says how). The docker-marked test builds the image with
neither DRAGNET_DOCKER_BUILD_NETWORK nor DRAGNET_DOCKER_CA_BUNDLE set.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import DOCKER_REPORT

from dragnet.couchdb import docker as dk
from dragnet.couchdb import image_build as ib
from dragnet.errors import DragnetError, UsageError

LOGS = Path(__file__).parent / "fixtures" / "docker-build"
BRIDGE = ib.Settings(network="bridge", ca_bundle=None)
HOST_CA = ib.Settings(network="host", ca_bundle="/etc/ssl/certs/ca-certificates.crt", ca_auto=True,
                      ca_certificates=52)


def _log(name: str) -> str:
    return (LOGS / f"{name}.log").read_text()


def test_no_network_from_the_builds_containers():
    f = ib.classify(_log("no-network"))
    assert (f.step, f.cause) == ("6/34", "network")
    assert f.instruction.startswith("RUN set -eux;     apt-get update;")
    assert f.evidence == "Temporary failure resolving 'deb.debian.org'"
    msg = ib.message("dragnet/couchdb:3.5.0", f, BRIDGE, "/state/build.log")
    assert "\n" not in msg
    assert msg.startswith("building dragnet/couchdb:3.5.0 failed at step 6/34 (RUN set -eux; apt-get update;")
    assert f"unset {ib.NETWORK_ENV} or set it to host" in msg and msg.endswith("(full log: /state/build.log)")
    # already on the host's network: the fix is not the setting that was already given
    on_host = ib.message("x", f, ib.Settings(network="host", ca_bundle=None), "b.log")
    assert "the host's network did not reach the package mirrors either" in on_host
    assert "set it to host" not in on_host
    # pip's turn (the apt step came from the layer cache): urllib3's words for it
    f = ib.classify(_log("no-network-pip"))
    assert (f.step, f.cause) == ("8/34", "network")
    assert f.evidence.startswith("Failed to establish a new connection: [Errno -3] Temporary failure in name")


def test_certificate_the_build_does_not_trust():
    # pip also says "Max retries exceeded" and "No matching distribution": the certificate is the cause
    f = ib.classify(_log("certificate"))
    assert (f.step, f.cause) == ("8/34", "certificate")
    assert "CERTIFICATE_VERIFY_FAILED" in f.evidence and "self-signed certificate in certificate chain" in f.evidence
    msg = ib.message("dragnet/couchdb:3.5.0", f, ib.Settings(network="host", ca_bundle=None), "b.log")
    assert "\n" not in msg and "at step 8/34 (RUN set -eu; python3 -m venv" in msg
    assert f"set {ib.CA_ENV} to a PEM bundle holding the proxy's CA" in msg
    # a bundle was used and lacked the CA: the message says which, so the user gives another
    msg = ib.message("x", f, HOST_CA, "b.log")
    assert "not in the host's CA bundle /etc/ssl/certs/ca-certificates.crt (52 certificates" in msg
    # npm's (Node's) words for it, in the bun stage
    f = ib.classify(_log("certificate-npm"))
    assert (f.step, f.cause, f.evidence) == ("15/34", "certificate", "npm ERR! code SELF_SIGNED_CERT_IN_CHAIN")


def test_genuine_dockerfile_errors_are_neither():
    f = ib.classify(_log("dockerfile"))   # a misspelt package: apt reached its mirror and has no such name
    assert (f.step, f.cause, f.evidence) == ("6/34", "build", "E: Unable to locate package python3-venvv")
    f = ib.classify(_log("copy"))         # no output of its own: the engine's error is the evidence
    assert f.cause == "build" and f.instruction.startswith("COPY query_servers/python/dragnet-qs.py")
    assert f.step == "20/34" and f.evidence.startswith("COPY failed: file not found in build context")
    msg = ib.message("x", f, HOST_CA, "b.log")
    assert "neither the network nor a certificate" in msg and ib.CA_ENV not in msg and ib.NETWORK_ENV not in msg


def test_log_lines_and_path():
    coloured = {"stream": "\x1b[91mE: Unable to locate package x\n\x1b[0m"}   # a RUN step's stderr
    assert ib.log_line(coloured) == "E: Unable to locate package x\n"
    assert ib.log_line({"error": "COPY failed\n", "errorDetail": {}}) == f"{ib.ERROR_PREFIX}COPY failed\n"
    assert ib.log_line({"status": "Pulling from library/debian", "id": "bookworm"}) == \
        "Pulling from library/debian bookworm\n"
    assert ib.log_line({"aux": {"ID": "sha256:0"}}) == ""
    assert ib.log_path(Path("/s"), "dragnet/couchdb:3.5.0") == Path("/s/build-dragnet_couchdb_3.5.0.log")
    # an engine error before any step (a build refused outright) is still one line with the log's path
    refused = "Cannot locate specified Dockerfile: docker/Dockerfile"
    f = ib.classify(ib.log_line({"error": refused}))
    assert (f.step, f.cause, f.evidence) == (None, "build", refused)
    assert ib.message("x", f, BRIDGE, "b.log").startswith(f"building x failed: {refused};")


def test_ca_bundle_named_found_or_none(tmp_path):
    bundle = tmp_path / "ca.pem"
    bundle.write_text("x")
    assert ib.ca_bundle({ib.CA_ENV: "/p.pem"}, (str(bundle),)) == ("/p.pem", False)
    assert ib.ca_bundle({ib.CA_ENV: ib.NO_CA}, (str(bundle),)) == (None, False)
    assert ib.ca_bundle({}, (str(tmp_path / "no"), str(bundle))) == (str(bundle), True)
    assert ib.ca_bundle({"SSL_CERT_FILE": "/q.pem"}, (str(bundle),)) == ("/q.pem", True)
    assert ib.ca_bundle({}, (str(tmp_path / "no"),)) == (None, False)
    assert ib.build_network({}) == "host" and ib.build_network({ib.NETWORK_ENV: "bridge"}) == "bridge"


@pytest.mark.docker
@pytest.mark.slow
def test_build_with_neither_setting_works_or_says_why(engine, tmp_path):
    """The newcomer's build: no DRAGNET_DOCKER_* at all. It succeeds (the host's network and CA bundle), or
    where the machine does not allow that, fails with the one-line hint: a network or certificate cause
    and the log file. A genuine error of the Dockerfile fails the test."""
    image = "dragnet/couchdb:issue22-test"
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRAGNET_DOCKER_")}
    env["DRAGNET_STATE_DIR"] = str(tmp_path)
    log = ib.log_path(tmp_path, image)
    try:
        dk.build_image(engine, image, env=env)
    except DragnetError as exc:
        msg = str(exc)
        assert "\n" not in msg and f"(full log: {log})" in msg and "failed at step " in msg, msg
        assert log.is_file()
        failure = ib.classify(log.read_text())
        assert failure.cause in ("network", "certificate"), msg
        DOCKER_REPORT.append(f"default build of {image}: the hint ({failure.cause}): {msg}")
        return
    finally:
        try:
            engine.images.remove(image)
        except Exception:
            pass   # not built
    DOCKER_REPORT.append(f"default build of {image}: built; {log.read_text().splitlines()[0]}")
    first = log.read_text().splitlines()[0]
    assert "RUN steps on network host" in first
    assert "Successfully tagged " + image in log.read_text()


@pytest.mark.docker
def test_a_network_the_engine_lacks_is_refused_before_the_build(engine, tmp_path):
    env = {dk.NETWORK_ENV: "dragnet-no-such-net", "DRAGNET_STATE_DIR": str(tmp_path), dk.CA_ENV: "none"}
    with pytest.raises(UsageError, match=f"^{dk.NETWORK_ENV}=dragnet-no-such-net: the Docker engine has no such"):
        dk.build_image(engine, "dragnet/couchdb:issue22-never", env=env)
    assert list(tmp_path.iterdir()) == []   # refused before the build: no log
