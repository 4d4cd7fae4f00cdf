"""Optional dependencies (setup.cfg extras): a one-line message naming the extra when one is missing."""

from __future__ import annotations

import importlib
from types import ModuleType

from dragnet.errors import DragnetError

EXTRAS = {"docker": "docker", "matplotlib": "plot", "plotly": "plot"}


def require(module: str, purpose: str) -> ModuleType:
    """Import `module`, or raise DragnetError saying which extra to install for `purpose`."""
    try:
        return importlib.import_module(module)
    except ImportError:
        extra = EXTRAS[module.split(".")[0]]
        raise DragnetError(f"{purpose} needs the optional package {module.split('.')[0]}: "
                           f"pip install 'dragnet[{extra}]'") from None
