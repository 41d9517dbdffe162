"""The stubs that show type checkers the names dmlpy makes at import time: up to date with the
package, and what mypy makes of a user's script with them."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
STUBS = ["dmlpy/__init__.pyi", "dmlpy/graph.pyi"]

# Each assignment's annotation is the type the stubs must give: mypy refuses the script otherwise.
USER_SCRIPT = """\
import numpy as np

import dmlpy as dml

x = np.ones((2, 3), np.float32)
y: np.ndarray = dml.relu(np.ones(3, np.float32))
rows: np.ndarray = dml.softmax(x, axes=(1,))
on_device: dml.DeviceArray = dml.elu_grad(x, dml.asarray(x), alpha=0.5)
t = dml.BufferTensorDesc(dml.TensorDataType.FLOAT32, (4,))
desc: dml.ActivationEluOperatorDesc = dml.ActivationEluOperatorDesc(input_tensor=t, output_tensor=t, alpha=1.0)
alpha: float = desc.alpha
value: dml.GraphValue = dml.graph.relu(dml.GraphBuilder().input(t))
device: dml.Device = dml.create_device()
version: str = dml.__version__
"""

MISTAKES = """\
import numpy as np

import dmlpy as dml

x = np.ones(3, np.float32)
t = dml.BufferTensorDesc(dml.TensorDataType.FLOAT32, (4,))
desc = dml.ActivationEluOperatorDesc(input_tensor=t, output_tensor=t, alpa=1.0)
y = dml.relu_nonexistent(x)
"""


@pytest.fixture(scope="module")
def mypy_cache(tmp_path_factory):
    """One cache for the module's mypy runs: the later ones reuse the first's analysis of dmlpy
    and NumPy (about 4 s a run without it)."""
    return tmp_path_factory.mktemp("mypy_cache")


def run_mypy(cache: Path, *paths) -> subprocess.CompletedProcess:
    # Run from the checkout, so mypy finds its dmlpy (the editable install's import hook is
    # invisible to mypy). Errors in dmlpy's own modules are not the user's: they are followed
    # silently, as mypy follows an installed package.
    command = [sys.executable, "-m", "mypy", "--cache-dir", str(cache), "--python-executable", sys.executable,
               "--follow-imports=silent", *map(str, paths)]
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=300)


def test_stubs_are_up_to_date():
    result = subprocess.run([sys.executable, "tools/gen_stubs.py", "--check"], capture_output=True, text=True,
                            cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_accepts_a_script_using_the_generated_names(tmp_path, mypy_cache):
    script = tmp_path / "user_script.py"
    script.write_text(USER_SCRIPT)
    result = run_mypy(mypy_cache, script, *STUBS)  # the stubs named too: their own errors are reported
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_reports_a_misspelt_field_and_a_missing_function(tmp_path, mypy_cache):
    script = tmp_path / "mistakes.py"
    script.write_text(MISTAKES)
    result = run_mypy(mypy_cache, script)
    assert result.returncode != 0, result.stdout + result.stderr
    lines = MISTAKES.splitlines()
    for mistake in "alpa", "relu_nonexistent":
        line = next(k for k, text in enumerate(lines, 1) if mistake in text)
        assert re.search(rf"mistakes\.py:{line}: error: .*{mistake}", result.stdout), result.stdout
