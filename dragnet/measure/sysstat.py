"""A sysstat tool (pidstat, iostat) running in the background until stopped, its output kept whole."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time


class SysstatRunner:
    """Runs `argv` with LC_ALL=C, TZ=UTC and S_TIME_FORMAT=ISO (so parsers get ISO dates and UTC times),
    output to a temporary file, until stop()."""

    tool = ""                      # the executable, for available()

    def __init__(self, interval: int = 1):
        self.interval = max(1, int(interval))
        self.proc: subprocess.Popen | None = None
        self.started_at: float | None = None
        self.stopped_at: float | None = None
        self._out = None
        self.text = ""

    @classmethod
    def available(cls) -> bool:
        return shutil.which(cls.tool) is not None

    @property
    def argv(self) -> list[str]:
        raise NotImplementedError

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def start(self):
        env = dict(os.environ, LC_ALL="C", TZ="UTC", S_TIME_FORMAT="ISO")
        self._out = tempfile.TemporaryFile(mode="w+b")
        self.proc = subprocess.Popen(self.argv, stdout=self._out, stderr=subprocess.DEVNULL, env=env,
                                     stdin=subprocess.DEVNULL)
        self.started_at = time.time()
        return self

    def stop(self, first_report: bool = True) -> str:
        """Stop the tool (SIGINT, as Ctrl-C) and return its whole output; first_report=False stops at once
        (an interrupted run), even before the tool's first report."""
        if self.proc is None:
            return self.text
        if self.proc.poll() is None:
            # the first report comes one interval after the start: a build shorter than that would
            # otherwise leave no sample at all, so let it run into its first report
            early = (self.started_at or 0) + self.interval + 0.3 - time.time()
            if first_report and early > 0:
                time.sleep(early)
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.stopped_at = time.time()
        self._out.seek(0)
        self.text = self._out.read().decode("utf-8", errors="replace")
        self._out.close()
        self.proc = None
        return self.text

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
