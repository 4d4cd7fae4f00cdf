"""What the speed targets share: the load average, and a closing summary of ratios and targets."""

from __future__ import annotations

import os
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def summary(name: str, ratios: list[float], held: list[bool]) -> int:
    """Prints the ratios' spread and how often the target held; the exit code: 0 when it held every time."""
    if ratios:
        print(f"{name}: ratio median {statistics.median(ratios):.3f}, min {min(ratios):.3f}, max {max(ratios):.3f} "
              f"over {len(ratios)} trials")
    print(f"{name}: target held in {sum(held)} of {len(held)} trials; load average now {load()}")
    return 0 if held and all(held) else 1
