"""examples/train_mlp.py in its short mode: a few training steps under two device profiles
give the same weights bit for bit, the report ends with the two lines scripts read, the
first step's gradients agree with an independent model, and bad options are refused."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("sklearn")  # the example's dataset; tools/setup.sh installs it in the checkout's venv

ROOT = Path(__file__).resolve().parents[1]


def train(*args):
    result = subprocess.run([sys.executable, "examples/train_mlp.py", *map(str, args)], capture_output=True,
                            text=True, cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def test_short_training_gives_the_same_weights_under_two_profiles():
    runs = [train("--steps", 4, "--batch", 32, "--seed", 7, *profile)
            for profile in ([], ["--device-profile", "nvidia-h100"])]
    for lines in runs:
        assert re.fullmatch(r"test accuracy: (0|1)\.\d{4}", lines[-2]), lines[-2]
        assert re.fullmatch(r"weights sha256: [0-9a-f]{64}", lines[-1]), lines[-1]
        assert any(line.startswith("epoch 1/30: 4 steps, loss ") for line in lines)
    assert runs[0][-1] == runs[1][-1]
    other_seed = train("--steps", 4, "--batch", 32, "--seed", 8)
    assert other_seed[-1] != runs[0][-1]  # the seed reaches the weights


def test_first_gradients_agree_with_an_independent_model():
    lines = train("--check-torch", "--batch", 16)
    found = [re.search(r"d(w0|b0|w1|b1): at most [\d.]+ ULP of each element, ([\d.]+) ULP of the largest", line)
             for line in lines]
    scaled = {m.group(1): float(m.group(2)) for m in found if m}
    assert set(scaled) == {"w0", "b0", "w1", "b1"}
    assert max(scaled.values()) <= 4.0, scaled


@pytest.mark.parametrize("args, words", [(["--batch", "0"], "at least 1"), (["--steps", "0"], "at least 1"),
                                         (["--batch", "5000"], "larger than")])
def test_bad_options_are_refused(args, words):
    result = subprocess.run([sys.executable, "examples/train_mlp.py", *args], capture_output=True, text=True,
                            cwd=ROOT, timeout=120)
    assert result.returncode == 2 and words in result.stderr, result.stderr
