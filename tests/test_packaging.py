"""Install and packaging: runtime dependencies, optional extras, side-effect-free discovery, and a real
`pip install` of the built wheel run from elsewhere (issue 12)."""

from __future__ import annotations

import ast
import configparser
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dragnet import paths
from dragnet.errors import DragnetError

REPO = Path(__file__).resolve().parent.parent


def _requirements(section: str, key: str) -> dict[str, str]:
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg")
    out = {}
    for line in cfg[section][key].splitlines():
        line = line.split("#")[0].strip()
        if line:
            name = line.replace(">", "=").replace("<", "=").split("=")[0].strip().lower()
            out[name] = line
    return out


def _extras() -> dict[str, dict[str, str]]:
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg")
    return {extra: _requirements("options.extras_require", extra) for extra in cfg["options.extras_require"]}


# --- dependencies ------------------------------------------------------------------------------------

def test_query_server_engines_are_runtime_requirements_and_docker_and_matplotlib_are_extras():
    required = _requirements("options", "install_requires")
    extras = _extras()
    # couchpy (the reference server) and PyChakra (chakra's engine) are needed to run, not to test
    assert required["couchdb"] == "couchdb==1.2"
    assert required["pychakra"] == "PyChakra==2.3.0"
    assert "couchdb" not in extras["test"] and "pychakra" not in extras["test"]
    assert "docker" not in required and "matplotlib" not in required
    assert "docker" in extras["docker"] and "matplotlib" in extras["plot"]
    # tests/test_qsbench.py imports numpy
    assert "numpy" in extras["test"]


def test_isal_is_pinned_to_the_version_the_byte_identical_gz_promise_was_made_with():
    required = _requirements("options", "install_requires")
    assert required["isal"] == f"isal=={importlib.metadata.version('isal')}"


def _guarded_imports(tree: ast.AST, module: str) -> list[int]:
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(isinstance(h.type, ast.Name) and h.type.id in ("ImportError", "ModuleNotFoundError")
                                              for h in node.handlers):
            for sub in ast.walk(ast.Module(body=node.body, type_ignores=[])):
                names = ([a.name for a in sub.names] if isinstance(sub, ast.Import)
                         else [sub.module or ""] if isinstance(sub, ast.ImportFrom) else [])
                if any(n.split(".")[0] == module for n in names):
                    lines.append(node.lineno)
    return lines


@pytest.mark.parametrize("requirement, module", [("orjson", "orjson"), ("pysimdjson", "simdjson")])
def test_json_speedups_are_required_not_optional(requirement, module):
    assert requirement in _requirements("options", "install_requires")
    guarded = {str(p.relative_to(REPO)): _guarded_imports(ast.parse(p.read_text()), module)
               for top in ("dragnet", "data_prep") for p in (REPO / top).rglob("*.py")}
    assert {p: lines for p, lines in guarded.items() if lines} == {}


def test_a_missing_docker_sdk_names_the_extra(monkeypatch):
    from dragnet.couchdb import docker as couchdb_docker

    monkeypatch.setitem(sys.modules, "docker", None)  # `import docker` now fails as if not installed
    with pytest.raises(DragnetError) as err:
        couchdb_docker.client({})
    assert "pip install 'dragnet[docker]'" in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("module", ["dragnet.report.charts", "dragnet.report.qsbench_plot"])
def test_missing_matplotlib_names_the_extra(monkeypatch, module):
    import importlib

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.delitem(sys.modules, module, raising=False)
    with pytest.raises(DragnetError) as err:
        importlib.import_module(module)
    assert "pip install 'dragnet[plot]'" in str(err.value) and "\n" not in str(err.value)
    monkeypatch.delitem(sys.modules, module, raising=False)


def test_the_cli_prints_the_missing_extra_in_one_line(tmp_path):
    # `dragnet couch up --backend docker` without the Docker SDK: one line naming the extra, no traceback
    code = ("import sys; sys.modules['docker'] = None; from dragnet.cli import main; "
            "sys.argv = ['dragnet', 'couch', 'up', '--backend', 'docker', '--port', '59999']; main()")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120,
                         env=dict(os.environ, DOCKER_HOST="unix:///nonexistent.sock", COUCHDB_USER="admin",
                                  COUCHDB_PASSWORD="secret"))
    assert out.returncode != 0
    assert "pip install 'dragnet[docker]'" in out.stderr and "Traceback" not in out.stderr, out.stderr


# --- discovery has no side effects --------------------------------------------------------------------

def _copy_sources(dest: Path) -> Path:
    """The repo's files as a clone would have them (tracked and new, not ignored: no build outputs)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        src = REPO / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


def _pypy_logger(bin_dir: Path, log: Path) -> None:
    real = shutil.which("pypy3")
    bin_dir.mkdir()
    wrapper = bin_dir / "pypy3"
    wrapper.write_text(f"#!/bin/sh\necho \"$@\" >> {log}\nexec {real} \"$@\"\n")
    wrapper.chmod(0o755)


def _tree_state(root: Path) -> tuple[str, list]:
    status = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=root, capture_output=True,
                            text=True, check=True).stdout
    files = sorted((str(p.relative_to(root)), p.is_symlink()) for p in root.rglob("*")
                   if ".git" not in p.relative_to(root).parts and "__pycache__" not in p.parts)
    return status, files


@pytest.mark.skipif(not shutil.which("pypy3"), reason="needs pypy3 (make deps)")
def test_listing_servers_twice_changes_nothing_and_spawns_no_pypy(tmp_path):
    clone = _copy_sources(tmp_path / "clone")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q"], cwd=clone, check=True)
    subprocess.run([*git, "add", "-A"], cwd=clone, check=True)
    subprocess.run([*git, "commit", "-qm", "clone"], cwd=clone, check=True)
    log = tmp_path / "pypy.log"
    _pypy_logger(tmp_path / "bin", log)
    env = dict(os.environ, PYTHONPATH=str(clone), PATH=f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}",
               XDG_CACHE_HOME=str(tmp_path / "cache"))
    before = _tree_state(clone)
    for _ in range(2):
        out = subprocess.run([sys.executable, "-m", "dragnet", "servers", "--json"], cwd=clone, env=env,
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert _tree_state(clone) == before
    assert not log.exists(), log.read_text()
    skipped = {s["name"]: s["reason"] for s in json.loads(out.stdout)["skipped"]}
    assert "dragnet servers --build" in skipped["couchpy-pypy"]

    # --build does that work once; the listings after it still spawn nothing
    out = subprocess.run([sys.executable, "-m", "dragnet", "servers", "--build", "couchpy-pypy", "--json"], cwd=clone,
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "couchpy-pypy: built" in out.stderr
    assert "couchpy-pypy" in {s["name"] for s in json.loads(out.stdout)["servers"]}
    spawned = log.read_text()
    out = subprocess.run([sys.executable, "-m", "dragnet", "servers", "--json"], cwd=clone, env=env,
                         capture_output=True, text=True, timeout=120)
    assert "couchpy-pypy" in {s["name"] for s in json.loads(out.stdout)["servers"]}
    assert log.read_text() == spawned


def test_building_chakra_says_why_it_cannot(tmp_path):
    # the system python has no PyChakra: the reason names it, and nothing is built
    system_python = shutil.which("python3", path="/usr/bin:/bin")
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from dragnet.servers.compiling import build_chakra; "
            "r = build_chakra(); print(r.ok, r.detail)")
    if subprocess.run([system_python, "-I", "-c", "import PyChakra"], capture_output=True).returncode == 0:
        pytest.skip(f"{system_python} has PyChakra")
    out = subprocess.run([system_python, "-I", "-c", code, str(REPO)], capture_output=True, text=True, timeout=60)
    assert out.stdout.startswith("False") and "pip install PyChakra==2.3.0" in out.stdout, out.stderr

    from dragnet.servers.compiling import build_chakra

    result = build_chakra(dict(os.environ, CC=str(tmp_path / "no-such-cc")))
    assert not result.ok and "no C compiler" in result.detail


def test_an_installed_copy_keeps_built_servers_in_the_user_cache(monkeypatch, tmp_path):
    monkeypatch.setattr(paths, "PACKAGED", tmp_path / "_data")
    assert paths.data_root() == paths.CHECKOUT and paths.build_root() == paths.CHECKOUT / "query_servers"
    (tmp_path / "_data" / "query_servers").mkdir(parents=True)
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    assert paths.data_root() == tmp_path / "_data"
    assert paths.build_root(env) == tmp_path / "cache" / "dragnet" / paths.__version__ / "query_servers"


# --- a real install ---------------------------------------------------------------------------------

@pytest.mark.slow
def test_pip_install_of_the_built_wheel_works_from_elsewhere(tmp_path):
    """sdist from a clone's files, wheel from the sdist, installed into a fresh venv (dependencies from this
    venv's site-packages, so nothing is downloaded), then run from an unrelated folder."""
    clone = _copy_sources(tmp_path / "clone")
    subprocess.run([sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir", str(tmp_path / "dist"),
                    str(clone)], check=True, capture_output=True, timeout=300)
    sdist = next((tmp_path / "dist").glob("dragnet-*.tar.gz"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                    str(tmp_path / "dist"), str(sdist)], check=True, capture_output=True, timeout=300)
    wheel = next((tmp_path / "dist").glob("dragnet-*.whl"))
    shutil.rmtree(clone)  # nothing may be read from the sources any more

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    purelib = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    import sysconfig
    Path(purelib, "project-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps", str(wheel)],
                   check=True, capture_output=True, timeout=300)

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"))
    env.pop("PYTHONPATH", None)
    dragnet = [str(venv / "bin" / "dragnet")]

    def run(*args, timeout=600):
        out = subprocess.run([*dragnet, *args], cwd=elsewhere, env=env, capture_output=True, text=True,
                             timeout=timeout)
        assert out.returncode == 0, f"dragnet {' '.join(args)}: {out.stderr[-2000:]}"
        return out

    installed = subprocess.run([str(py), "-c", "import dragnet.paths as p; print(p.data_root())"], cwd=elsewhere,
                               env=env, capture_output=True, text=True, check=True).stdout.strip()
    assert installed.startswith(str(venv)) and installed.endswith("_data")

    listed = json.loads(run("servers", "--json").stdout)
    skipped = {s["name"]: s["reason"] for s in listed["skipped"]}
    assert "dragnet servers --build" in skipped["chakra"]

    built = run("servers", "--build", "chakra", "--json")
    assert "chakra: built" in built.stderr
    servers = {s["name"]: s for s in json.loads(built.stdout)["servers"]}
    assert servers["chakra"]["command"][0].startswith(str(tmp_path / "cache" / "dragnet"))
    assert servers["python3"]["command"][1].startswith(installed)
    assert servers["node"]["command"][1].startswith(installed) if "node" in servers else True

    bench = json.loads(run("qsbench", "--count", "200", "--servers", ",".join(n for n in ("python3", "chakra", "node")
                                                                             if n in servers),
                           "--repeat", "1", "--warmup", "0", "--json").stdout)
    assert bench  # every server ran and agreed (qsbench exits non-zero otherwise)

    run("generate", "--count", "50", "--seed", "3", "--output", "sample.jsonl.gz")
    reference = tmp_path / "reference.jsonl.gz"
    subprocess.run([sys.executable, "-m", "dragnet", "generate", "--count", "50", "--seed", "3", "--output",
                    str(reference)], check=True, capture_output=True, cwd=REPO, timeout=300)
    assert (elsewhere / "sample.jsonl.gz").read_bytes() == reference.read_bytes()
    # nothing was written next to the installed files
    assert not any(p.name == "build" for p in Path(installed).rglob("*"))
