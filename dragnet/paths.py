"""Where dragnet's own files are (views/, query_servers/, docker/) and where the servers it builds go.

From a checkout, or an editable install of one, they are the repo's top-level folders. A wheel (a plain
`pip install .`, pipx) carries copies of them in dragnet/_data, put there by setup.py's build_py: nothing
outside the package gets installed, and the checkout may be gone.

Built servers (chakra, couchpy-pypy's PYTHONPATH, Bun) go next to their sources in a checkout (`make
servers`), else under the user cache ($XDG_CACHE_HOME/dragnet/<version>): site-packages may be read-only
or shared, and a different dragnet version ships different sources.
"""

from __future__ import annotations

import os
from pathlib import Path

from dragnet import __version__

PACKAGE = Path(__file__).resolve().parent
PACKAGED = PACKAGE / "_data"
CHECKOUT = PACKAGE.parent
DATA_DIRS = ("views", "query_servers", "docker")


def data_root() -> Path:
    """The folder holding views/, query_servers/ and docker/: the wheel's copy when installed, else the checkout."""
    return PACKAGED if (PACKAGED / "query_servers").is_dir() else CHECKOUT


def installed() -> bool:
    """True when running from an installed wheel rather than from a checkout."""
    return data_root() == PACKAGED


def cache_dir(env: dict | None = None) -> Path:
    """$XDG_CACHE_HOME/dragnet (default ~/.cache/dragnet)."""
    env = os.environ if env is None else env
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "dragnet"


def build_root(env: dict | None = None) -> Path:
    """Where built query servers live: query_servers/ of the checkout, or the user cache when installed."""
    if not installed():
        return CHECKOUT / "query_servers"
    return cache_dir(env) / __version__ / "query_servers"


def compiled_or_fallback(asked: str, choices: tuple[str, str, str], binary: Path, what: str, compiled_what: str) -> str:
    """Which runs of a helper `make servers` compiles and its Python fallback: `choices` is (auto, compiled,
    fallback). A name not among them, or the compiled one asked for and not built, is bad input."""
    from dragnet.errors import UsageError

    _auto, compiled, fallback = choices
    if asked not in choices:
        raise UsageError(f"{what} must be one of {', '.join(choices)}, got {asked!r}")
    built = binary.is_file() and os.access(binary, os.X_OK)
    if asked == compiled and not built:
        raise UsageError(f"{compiled_what}: {binary} is not built (make servers)")
    return fallback if asked == fallback or not built else compiled
