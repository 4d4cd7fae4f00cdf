"""SIGTERM/SIGHUP become dragnet.signals.Terminated (a KeyboardInterrupt) so cleanups run; exit 128+n."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from dragnet.signals import Terminated


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_signal_runs_finally_and_exits_128_plus_n(tmp_path, sig):
    marker = tmp_path / "cleaned"
    code = textwrap.dedent(f"""
        import sys, time
        import click
        from dragnet.cli import COMMANDS, main

        @click.command("wait")
        def wait_cmd():
            try:
                print("ready", flush=True)
                time.sleep(30)
            finally:
                open({str(marker)!r}, "w").write("yes")

        import dragnet.cli as cli
        cli.COMMANDS["wait"] = "__main__:wait_cmd"
        main(["wait"])
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + sig
    assert marker.read_text() == "yes"
    assert f"terminated by {signal.Signals(sig).name}" in err and "Traceback" not in err


def test_terminated_is_a_keyboard_interrupt():
    exc = Terminated(signal.SIGTERM)
    assert isinstance(exc, KeyboardInterrupt) and exc.exit_code == 128 + 15
