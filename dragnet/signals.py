"""SIGTERM and SIGHUP end a run the way Ctrl-C does, so every `finally` and cleanup runs."""

from __future__ import annotations

import signal
import threading

HANDLED = (signal.SIGTERM, signal.SIGHUP)


class Terminated(KeyboardInterrupt):
    """Raised in the main thread on SIGTERM/SIGHUP; a KeyboardInterrupt so Ctrl-C cleanups cover it."""

    def __init__(self, signum: int):
        super().__init__(f"terminated by {signal.Signals(signum).name}")
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum     # what a shell reports for a process killed by that signal


def _raise(signum: int, _frame) -> None:
    # once: a second signal while cleaning up must not cut the cleanup short
    for s in HANDLED:
        signal.signal(s, signal.SIG_IGN)
    raise Terminated(signum)


def install() -> bool:
    """Route SIGTERM/SIGHUP to Terminated; only possible (and only done) from the main thread."""
    if threading.current_thread() is not threading.main_thread():
        return False
    for s in HANDLED:
        signal.signal(s, _raise)
    return True
