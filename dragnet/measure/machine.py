"""What machine a measurement ran on, recorded in every results file."""

from __future__ import annotations

import os
import platform
import socket


def _cpu_model(cpuinfo: str) -> str:
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("model name", "Model", "Hardware", "cpu model"):
            return value.strip()
    return platform.processor() or platform.machine()


def _mem_total_kb(meminfo: str) -> int | None:
    for line in meminfo.splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1])
    return None


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return ""


def load_average() -> list[float] | None:
    """The 1, 5 and 15 minute load averages now (None where the OS has none): how busy the machine was."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def machine_info() -> dict:
    """Host facts: name, CPU model, logical cores, memory, kernel, architecture, Python, and the load
    average when the facts were read (a measurement on a loaded machine says so)."""
    return {
        "hostname": socket.gethostname(),
        "cpu_model": _cpu_model(_read("/proc/cpuinfo")),
        "cpu_count": os.cpu_count(),
        "mem_total_kb": _mem_total_kb(_read("/proc/meminfo")),
        "kernel": platform.release(),
        "arch": platform.machine(),
        "os": platform.system(),
        "python": platform.python_version(),
        "load_average": load_average(),
    }
