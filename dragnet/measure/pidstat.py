"""Per-process resources with sysstat's `pidstat -hrudvlI`: a pure parser and summaries, plus a runner.

`-h` prints one line per process and interval, repeating the `# Time ...` header before each interval;
`-l` prints the whole command line (with spaces) as the last column; `-I` divides %CPU by the number of
CPUs. The parser takes column names from the header, so a missing column (fd-nr needs root) or a
locale with AM/PM is fine.
"""

from __future__ import annotations

import calendar
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from dragnet.couchdb.client import mask_urls_in
from dragnet.servers.registry import family, pidstat_pattern
from dragnet.measure.sysstat import SysstatRunner

# Matches process names (pidstat -C is a regular expression over the command name).
DEFAULT_PATTERN = pidstat_pattern()

# pidstat column -> our sample key
COLUMNS = {
    "UID": "uid", "PID": "pid", "%usr": "usr_pct", "%system": "system_pct", "%guest": "guest_pct",
    "%wait": "wait_pct", "%CPU": "cpu_pct", "CPU": "cpu", "minflt/s": "minflt_s", "majflt/s": "majflt_s",
    "VSZ": "vsz_kb", "RSS": "rss_kb", "%MEM": "mem_pct", "kB_rd/s": "kb_rd_s", "kB_wr/s": "kb_wr_s",
    "kB_ccwr/s": "kb_ccwr_s", "iodelay": "iodelay", "threads": "threads", "fd-nr": "fd_nr",
}
# What the summary reports (average and peak of the per-interval sum over a family's processes).
METRICS = ("cpu_pct", "rss_kb", "vsz_kb", "minflt_s", "majflt_s", "kb_rd_s", "kb_wr_s", "iodelay", "threads")

EXCLUDED_FAMILIES = frozenset({"pidstat", "dragnet"})

_HEADER_LINE = re.compile(r"^(\S+)\s+(\S+)\s+\((\S+)\)\s+(\S+)\s+_?(\S+?)_?\s+\((\d+) CPU\)")
_HMS = re.compile(r"^(\d{1,2}):(\d{2}):(\d{2})$")


@dataclass
class Header:
    """pidstat's first line: `Linux 6.1.0 (host) 11/21/26 _x86_64_ (2 CPU)`."""

    os: str = ""
    kernel: str = ""
    hostname: str = ""
    date: str = ""
    arch: str = ""
    cpus: int | None = None


@dataclass
class Parsed:
    header: Header
    samples: list[dict] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)   # lines not understood (kept so nothing goes missing)


# families of the processes watching CouchDB rather than being it (the tools, this one and its tests)
WATCHERS = frozenset({"pidstat", "dragnet", "harness", "other", "python-dragnet"})


def rss_peaks_kb(summary: dict | None) -> dict[str, float]:
    """Each family's RSS peak (kB, summed over its processes) from a summary() as results keep it."""
    return {fam: e["rss_kb"]["peak"] for fam, e in (summary or {}).items()
            if isinstance(e, dict) and (e.get("rss_kb") or {}).get("peak")}


def own_memory(peaks_kb: dict | None) -> int | None:
    """CouchDB's own memory in one build, bytes: the sum over beam and the query servers of their RSS
    peaks (pidstat.rss_peaks_kb(), as a bench run keeps them in "pidstat_peak_rss_kb"). The page cache is not
    in it, so a memory limit must be at least this, plus whatever page cache it means to leave, or the
    kernel kills beam instead of the build reading from disk."""
    peaks = [v for fam, v in (peaks_kb or {}).items() if fam not in WATCHERS]
    return int(sum(peaks) * 1024) if peaks else None


def _to_number(text: str):
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


def _date_ymd(date: str) -> tuple[int, int, int] | None:
    m = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})", date)          # S_TIME_FORMAT=ISO
    if m:
        return int(m[1]), int(m[2]), int(m[3])
    m = re.fullmatch(r"(\d{2})/(\d{2})/(\d{2,4})", date)        # default C locale: MM/DD/YY
    if m:
        y = int(m[3])
        return (y + 2000 if y < 100 else y), int(m[1]), int(m[2])
    return None


def parse(text: str, *, utc: bool = True) -> Parsed:
    """Parse `pidstat -h ... -l` output into samples (dicts with COLUMNS keys, 'interval', 'time', 't',
    'command', 'family').

    't' is unix seconds computed from the header date and the sample's time of day, taken as UTC when
    utc=True (the runner starts pidstat with TZ=UTC); it follows midnight roll-over. None without a date.
    """
    header = Header()
    parsed = Parsed(header=header)
    cols: list[str] | None = None
    ymd = None
    day_offset = 0
    last_secs = None
    interval = -1      # each repeated header starts an interval (two can share one clock second)
    for raw in text.splitlines():
        # other processes' command lines may carry a password in a URL: it never reaches a results file
        line = mask_urls_in(raw.rstrip("\n"))
        if not line.strip():
            continue
        if cols is None and not line.startswith("#"):
            m = _HEADER_LINE.match(line)
            if m and not header.os:
                header.os, header.kernel, header.hostname, header.date, header.arch = m.group(1, 2, 3, 4, 5)
                header.cpus = int(m.group(6))
                ymd = _date_ymd(header.date)
                continue
        if line.startswith("#"):
            names = line[1:].split()
            if names and names[0] == "Time" and names[-1] == "Command":
                cols = names
                interval += 1
            else:
                parsed.skipped.append(line)
            continue
        if line.startswith("Average:") or cols is None:
            parsed.skipped.append(line)
            continue
        tokens = line.split(None, len(cols) - 1)
        ampm = None
        if len(tokens) >= 2 and tokens[1] in ("AM", "PM"):
            ampm = tokens[1]
            tokens = [tokens[0]] + line.split(None, len(cols))[2:]
        if len(tokens) < len(cols):
            parsed.skipped.append(line)
            continue
        sample: dict = {"interval": interval, "time": tokens[0] + (f" {ampm}" if ampm else "")}
        ok = True
        for name, tok in zip(cols[1:-1], tokens[1:-1]):
            key = COLUMNS.get(name, name)
            val = _to_number(tok)
            if isinstance(val, str) and key in ("pid", "cpu_pct", "rss_kb"):
                ok = False
            sample[key] = val
        if not ok:
            parsed.skipped.append(line)
            continue
        sample["command"] = tokens[-1].strip()
        m = _HMS.match(tokens[0])
        secs = None
        if m:
            h, mi, s = int(m[1]), int(m[2]), int(m[3])
            if ampm:
                h = h % 12 + (12 if ampm == "PM" else 0)
            secs = h * 3600 + mi * 60 + s
            if last_secs is not None and secs < last_secs - 43200:
                day_offset += 86400          # crossed midnight
            last_secs = secs
        if secs is not None and ymd is not None and utc:
            sample["t"] = float(calendar.timegm((*ymd, 0, 0, 0)) + day_offset + secs)
        else:
            sample["t"] = None
        sample["family"] = family(sample["command"])
        parsed.samples.append(sample)
    return parsed


def _avg_peak(values: list[float]) -> dict:
    if not values:
        return {"avg": None, "peak": None}
    return {"avg": sum(values) / len(values), "peak": max(values)}


def summarize(samples: list[dict], *, exclude_pids: set[int] | frozenset = frozenset(),
              exclude_families: frozenset = EXCLUDED_FAMILIES, t_from: float | None = None,
              t_to: float | None = None, only_pids: set[int] | None = None) -> dict:
    """Per command family: pids, and average and peak (over intervals) of the family's summed metrics.

    Averages run over the intervals in which the family had at least one process. Also the peak RSS of a
    single process. Samples outside [t_from, t_to] are left out when both bounds and 't' are known;
    only_pids keeps just those processes (e.g. one CouchDB's process tree on a shared machine).
    """
    by_family: dict[str, dict] = {}
    for s in samples:
        fam = s.get("family") or family(s.get("command", ""))
        if fam in exclude_families or s.get("pid") in exclude_pids:
            continue
        if only_pids is not None and s.get("pid") not in only_pids:
            continue
        t = s.get("t")
        if t is not None and ((t_from is not None and t < t_from) or (t_to is not None and t > t_to)):
            continue
        g = by_family.setdefault(fam, {"pids": set(), "intervals": {}, "rss_single": 0.0, "command": s["command"]})
        g["pids"].add(s["pid"])
        iv = g["intervals"].setdefault(s.get("interval", s["time"]), {m: 0.0 for m in METRICS})
        for m in METRICS:
            v = s.get(m)
            if isinstance(v, (int, float)):
                iv[m] += v
        if isinstance(s.get("rss_kb"), (int, float)):
            g["rss_single"] = max(g["rss_single"], float(s["rss_kb"]))
    out = {}
    for fam, g in sorted(by_family.items()):
        ivs = list(g["intervals"].values())
        entry = {"pids": sorted(g["pids"]), "processes": len(g["pids"]), "intervals": len(ivs),
                 "rss_kb_single_peak": g["rss_single"], "command_example": g["command"][:200]}
        for m in METRICS:
            entry[m] = _avg_peak([iv[m] for iv in ivs])
        out[fam] = entry
    return out


class PidstatRunner(SysstatRunner):
    """Runs `pidstat -hrudvlI -C PATTERN INTERVAL` in the background until stop(); output to a temp file."""

    tool = "pidstat"

    def __init__(self, pattern: str = DEFAULT_PATTERN, interval: int = 1):
        super().__init__(interval)
        # the default read now, not at import: user-given servers (dragnet.servers.user) may have come since
        self.pattern = pidstat_pattern() if pattern == DEFAULT_PATTERN else pattern

    @property
    def argv(self) -> list[str]:
        return ["pidstat", "-hrudvlI", "-C", self.pattern, str(self.interval)]


def _ppids(proc: str = "/proc") -> dict[int, int]:
    """pid -> parent pid of every process now."""
    out = {}
    for entry in os.listdir(proc):
        if not entry.isdigit():
            continue
        try:
            with open(f"{proc}/{entry}/stat", "rb") as fh:
                stat = fh.read().decode("utf-8", "replace")
        except OSError:
            continue
        # the command name (2nd field) may hold spaces and parentheses: split after the last ')'
        rest = stat.rsplit(")", 1)[-1].split()
        if len(rest) >= 2:
            out[int(entry)] = int(rest[1])
    return out


def process_tree(root: int, proc: str = "/proc") -> set[int]:
    """root and all its descendants now (query servers are children of beam, via erl_child_setup)."""
    children: dict[int, list[int]] = {}
    for pid, ppid in _ppids(proc).items():
        children.setdefault(ppid, []).append(pid)
    tree, todo = {root}, [root]
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in tree:
                tree.add(c)
                todo.append(c)
    return tree


def process_name(pid: int, proc: str = "/proc") -> str | None:
    """The kernel's short name of a process (/proc/PID/comm), or None when it is gone."""
    try:
        return Path(f"{proc}/{pid}/comm").read_text().strip()
    except OSError:
        return None


def listening_pid(port: int, proc: str = "/proc") -> int | None:
    """The process listening on a local TCP port (via /proc/net/tcp{,6} socket inodes), or None."""
    inodes = set()
    for table in ("tcp", "tcp6"):
        try:
            lines = Path(f"{proc}/net/{table}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if len(f) > 9 and f[3] == "0A" and int(f[1].rsplit(":", 1)[1], 16) == port:   # 0A = LISTEN
                inodes.add(f[9])
    if not inodes:
        return None
    wanted = {f"socket:[{i}]" for i in inodes}
    for entry in os.listdir(proc):
        if not entry.isdigit():
            continue
        try:
            fds = os.listdir(f"{proc}/{entry}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"{proc}/{entry}/fd/{fd}") in wanted:
                    return int(entry)
            except OSError:
                continue
    return None


def parse_file(path: str | Path) -> Parsed:
    return parse(Path(path).read_text(encoding="utf-8", errors="replace"))
