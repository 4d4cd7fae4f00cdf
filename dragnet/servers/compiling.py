"""Building the query servers that need it: `dragnet servers --build` and `make servers` run this.

Discovery (dragnet.servers.discovery.discover) only looks at what is built here; it never builds, links or
spawns anything itself, so listing servers has no side effects. Each step reports what it did, or why it
could not (no compiler, no PyChakra, no pypy3, ...), and a step that cannot run does not stop the others.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from dragnet.servers import discovery as qs
from dragnet.servers.registry import build_steps

STEPS = build_steps()   # the registry's build steps (dragnet.servers.registry)


@dataclass(frozen=True)
class Built:
    name: str
    ok: bool
    detail: str  # the built path, or why it could not be built


def _tail(data: bytes, lines: int = 3) -> str:
    text = data.decode("utf-8", "replace").strip().splitlines()
    return " | ".join(text[-lines:]) or "no output"


def _pychakra_library() -> Path | None:
    spec = importlib.util.find_spec("PyChakra")
    if spec is None or not spec.origin:
        return None
    lib = Path(spec.origin).parent / "libs" / "linux" / "libChakraCore.so"
    return lib if lib.is_file() else None


def _make_c(name: str, src: Path, target: Path, env: dict | None, *args: str, timeout: int = 600,
            check=None) -> Built:
    """A C server's Makefile with BUILD at target's folder (the user cache when installed: the sources may sit
    in a read-only site-packages); check() says what else is missing, or None."""
    env = dict(os.environ if env is None else env)
    make = shutil.which("make", path=env.get("PATH"))
    if not make:
        return Built(name, False, "make not found (Debian: apt-get install make)")
    cc = env.get("CC") or "gcc"
    if not shutil.which(cc.split()[0], path=env.get("PATH")):
        return Built(name, False, f"no C compiler: {cc} not found (Debian: apt-get install gcc)")
    why = check() if check else None
    if why:
        return Built(name, False, why)
    out_dir = target.parent
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run([make, "-C", str(src), f"BUILD={out_dir}", *args], capture_output=True, env=env,
                              timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Built(name, False, f"make failed: {exc}")
    if proc.returncode != 0:
        return Built(name, False, f"make exited {proc.returncode}: {_tail(proc.stderr or proc.stdout)}")
    return Built(name, True, str(target))


def build_chakra(env: dict | None = None) -> Built:
    """query_servers/chakra's Makefile, against the libChakraCore.so of this python's PyChakra."""
    def check() -> str | None:
        if _pychakra_library() is None:
            return f"PyChakra (libChakraCore.so) is not installed for {sys.executable} (pip install PyChakra==2.3.0)"
        return None

    return _make_c("chakra", qs.CHAKRA_SRC, qs.CHAKRA_QS, env, f"PYTHON={sys.executable}", check=check)


def build_couchpy_pypy(env: dict | None = None) -> Built:
    """A folder holding only a link to the `couchdb` package, for PYTHONPATH under PyPy (CPython's whole
    site-packages would shadow PyPy's own modules), and a stamp once pypy3 answered couchpy's reset."""
    env = dict(os.environ if env is None else env)
    pypy = shutil.which("pypy3", path=env.get("PATH"))
    if not pypy:
        return Built("couchpy-pypy", False, "pypy3 is not on PATH (Debian: apt-get install pypy3)")
    package = qs.couchpy_package_dir()
    if package is None:
        return Built("couchpy-pypy", False, "the couchdb package (CouchDB==1.2) is not installed")
    target = qs.COUCHPY_PYPY_PATH
    link = target / "couchdb"
    stamp = target / qs.COUCHPY_PYPY_STAMP
    try:
        target.mkdir(parents=True, exist_ok=True)
        if not (link.is_symlink() and link.resolve() == package.resolve()):
            if link.is_symlink() or link.exists():
                link.unlink()
            link.symlink_to(package, target_is_directory=True)
        stamp.unlink(missing_ok=True)
        why = qs._pypy_runs_couchpy(pypy, str(target))
        if why:
            return Built("couchpy-pypy", False, why)
        stamp.write_text(qs._pypy_identity(pypy) + "\n", encoding="utf-8")
    except OSError as exc:
        return Built("couchpy-pypy", False, f"cannot prepare {target}: {exc}")
    return Built("couchpy-pypy", True, str(target))


def build_bun(env: dict | None = None) -> Built:
    """Bun from npm at query_servers/bun's pinned version; its Makefile installs into its own folder, so an
    installed dragnet runs it on a copy in the cache."""
    env = dict(os.environ if env is None else env)
    make = shutil.which("make", path=env.get("PATH"))
    if not make:
        return Built("bun", False, "make not found (Debian: apt-get install make)")
    work = qs.BUN_BINARY.parent.parent
    try:
        if work.resolve() != qs.BUN_SRC.resolve():
            work.mkdir(parents=True, exist_ok=True)
            for name in ("Makefile", "package.json"):
                shutil.copy2(qs.BUN_SRC / name, work / name)
        proc = subprocess.run([make, "-C", str(work)], capture_output=True, env=env, timeout=900)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Built("bun", False, f"make failed: {exc}")
    if proc.returncode != 0 or not qs.BUN_BINARY.exists():
        # the Makefile succeeds and says why on stderr when Bun cannot be installed or run here
        return Built("bun", False, _tail(proc.stderr or proc.stdout, 1))
    return Built("bun", True, str(qs.BUN_BINARY))


def build_ceiling(env: dict | None = None) -> Built:
    """query_servers/ceiling's Makefile: C, no library."""
    return _make_c("ceiling", qs.CEILING_SRC, qs.CEILING_QS, env, timeout=300)


BUILDERS = {"ceiling": build_ceiling, "chakra": build_chakra, "couchpy-pypy": build_couchpy_pypy, "bun": build_bun}


def build(names: list[str] | tuple[str, ...] = STEPS, env: dict | None = None, on_step=None) -> list[Built]:
    """Run each named step; on_step(name) is called before each (for progress)."""
    results = []
    for name in names:
        if on_step:
            on_step(name)
        results.append(BUILDERS[name](env))
    return results
