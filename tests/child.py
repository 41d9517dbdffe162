"""Run a Python snippet in a child process with a time limit, so that a crash or a hang fails
one test instead of the whole run."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PRELUDE = """
import gc, os, signal, sys, threading, time
import numpy as np
import dmlpy as dml
sys.path.insert(0, {tests!r})
from reference import relu_grad as reference_relu_grad
"""


def run_child(code: str, timeout: float = 90, **popen) -> subprocess.CompletedProcess:
    """Run `code` (after PRELUDE) in a fresh interpreter; fails the test on a time-out."""
    source = PRELUDE.format(tests=str(ROOT / "tests")) + textwrap.dedent(code)
    try:
        return subprocess.run([sys.executable, "-c", source], capture_output=True, text=True, timeout=timeout,
                              cwd=ROOT, **popen)
    except subprocess.TimeoutExpired as expired:
        raise AssertionError(f"the child process hung for {timeout} s; its output:\n{expired.stdout}\n"
                             f"{expired.stderr}") from None


def assert_clean(result: subprocess.CompletedProcess, expected_last_line: str = "ok") -> None:
    """The child exited 0 (not killed by a signal) and printed `expected_last_line` last."""
    assert result.returncode == 0, f"exit status {result.returncode}\n{result.stdout}\n{result.stderr}"
    lines = result.stdout.strip().splitlines()
    assert lines and lines[-1] == expected_last_line, f"{result.stdout}\n{result.stderr}"
