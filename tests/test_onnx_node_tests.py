"""ONNX's own backend node tests, run through dmlpy (tests/onnx_nodes.py): each case's outputs
against the ones ONNX's generators computed, under ONNX's backend rule (NumPy's allclose with
the case's rtol and atol for floating outputs; integers and booleans exactly, and the same
dtype and shape). Each case runs twice: on NumPy arrays, one operator at a time, and on
device arrays, whose element-wise chains and reductions are deferred and fused; the two give
the same bits (up to which NaN)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx")

from onnx_nodes import REFUSED, RUNNERS, NotCovered, check_case, node_cases, refusal, run_case, runs

import dmlpy as dml

DOC = Path(__file__).resolve().parent.parent / "docs" / "onnx.md"


def outside_directml(case) -> str | None:
    try:
        check_case(case)
    except NotCovered as reason:
        return str(reason)
    return None


def runnable():
    return [case for case in node_cases() if runs(case) and outside_directml(case) is None]


def assert_like_onnx(ours, theirs, case) -> None:
    ours = np.asarray(ours)
    assert ours.shape == theirs.shape, f"{case.name}: shape {ours.shape}, ONNX's {theirs.shape}"
    assert ours.dtype == theirs.dtype, f"{case.name}: dtype {ours.dtype}, ONNX's {theirs.dtype}"
    if theirs.dtype.kind == "f" or theirs.dtype.name == "bfloat16":
        np.testing.assert_allclose(ours.astype(np.float64), theirs.astype(np.float64), rtol=case.rtol,
                                   atol=case.atol, err_msg=case.name)
    else:
        np.testing.assert_array_equal(ours, theirs, err_msg=case.name)


def assert_same_bits(fused: np.ndarray, one_by_one: np.ndarray, case) -> None:
    assert fused.dtype == one_by_one.dtype and fused.shape == one_by_one.shape, case.name
    if fused.dtype.kind == "f" or fused.dtype.name == "bfloat16":
        nan = np.isnan(fused.astype(np.float64)) & np.isnan(one_by_one.astype(np.float64))
        bits = f"u{fused.dtype.itemsize}"
        fused, one_by_one = np.where(nan, 0, fused.view(bits)), np.where(nan, 0, one_by_one.view(bits))
    np.testing.assert_array_equal(fused, one_by_one, err_msg=f"{case.name}: device arrays against NumPy arrays")


@pytest.mark.parametrize("case", runnable(), ids=lambda case: case.name)
def test_onnx_node_case(case):
    reason = refusal(case)
    if reason is not None:
        # A DirectML type rule refuses it: dmlpy must say so, not compute something else.
        with pytest.raises(dml.DmlError, match="dtype|data_type|InputTensor"):
            run_case(case)
        return
    try:
        outputs = run_case(case)
    except NotCovered as why:
        pytest.skip(str(why))
    assert len(outputs) == len(case.outputs)
    for ours, theirs in zip(outputs, case.outputs):
        assert_like_onnx(ours, theirs, case)
    for fused, one_by_one in zip(run_case(case, on_device=True), outputs):
        assert_same_bits(fused, one_by_one, case)


def test_every_refusal_names_a_case():
    """A pattern in REFUSED that matches nothing is stale (ONNX renamed the case, or it left)."""
    names = [case.name for case in node_cases()]
    stale = [pattern for pattern in REFUSED if not any(re.fullmatch(pattern, name) for name in names)]
    assert not stale


def test_the_counts_in_docs_onnx_md_are_the_suites():
    """docs/onnx.md states how many of ONNX's node tests dmlpy runs; the statement stays true."""
    cases = node_cases()
    with_runner = [case for case in cases if runs(case)]
    outcome = Counter()
    for case in with_runner:
        if outside_directml(case) is not None:
            outcome["outside"] += 1
        elif refusal(case) is not None:
            outcome["refused"] += 1
        else:
            outcome["run"] += 1
    text = DOC.read_text()
    import onnx

    release = re.search(r"With ONNX (\S+), dmlpy", text)
    assert release, "docs/onnx.md lost the ONNX release its counts were taken with"
    if onnx.__version__ != release.group(1):
        pytest.skip(f"ONNX {onnx.__version__} is installed; docs/onnx.md counts {release.group(1)}'s cases "
                    "(`make setup` installs that one)")
    stated = re.search(r"runs (\d+) of the (\d+) cases .* refuses (\d+) .* (\d+) lie outside", text,
                       re.S)
    assert stated, "docs/onnx.md lost its counts sentence"
    assert tuple(map(int, stated.groups())) == (outcome["run"], len(cases), outcome["refused"], outcome["outside"])
    for op_type in RUNNERS:
        assert f"`{op_type}`" in text, f"docs/onnx.md does not list {op_type}"
