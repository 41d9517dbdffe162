"""Run a Python snippet in a child process with a time limit, so that a crash or a hang fails
one test instead of the whole run."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# On a time-out the parent sends SIGUSR1 first: faulthandler then writes every thread's Python
# stack to stderr, so a hang names the line it hangs on. A signal handler starts no thread, so
# the fork tests are unaffected.
PRELUDE = """
import faulthandler, gc, os, signal, sys, threading, time
faulthandler.register(signal.SIGUSR1, all_threads=True)
import numpy as np
import dmlpy as dml
sys.path.insert(0, {tests!r})
from reference import relu_grad as reference_relu_grad
"""


def run_child(code: str, timeout: float = 90, **popen) -> subprocess.CompletedProcess:
    """Run `code` (after PRELUDE) in a fresh interpreter; fails the test on a time-out, with the
    child's stacks at that moment in the message."""
    source = PRELUDE.format(tests=str(ROOT / "tests")) + textwrap.dedent(code)
    arguments = [sys.executable, "-c", source]
    with subprocess.Popen(arguments, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                          **popen) as child:
        try:
            stdout, stderr = child.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            child.send_signal(signal.SIGUSR1)
            try:
                stdout, stderr = child.communicate(timeout=5)
            except subprocess.TimeoutExpired:
                child.kill()
                stdout, stderr = child.communicate()
            child.kill()
            raise AssertionError(f"the child process hung for {timeout} s; its output and stacks:\n"
                                 f"{stdout}\n{stderr}") from None
    return subprocess.CompletedProcess(arguments, child.returncode, stdout, stderr)


def assert_clean(result: subprocess.CompletedProcess, expected_last_line: str = "ok") -> None:
    """The child exited 0 (not killed by a signal) and printed `expected_last_line` last."""
    assert result.returncode == 0, f"exit status {result.returncode}\n{result.stdout}\n{result.stderr}"
    lines = result.stdout.strip().splitlines()
    assert lines and lines[-1] == expected_last_line, f"{result.stdout}\n{result.stderr}"
