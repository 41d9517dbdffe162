"""ONNX's own backend node tests, run through dmlpy (tests/onnx_nodes.py): each case's outputs
against the ones ONNX's generators computed, under ONNX's backend rule (NumPy's allclose with
the case's rtol and atol for floating outputs; integers and booleans exactly, and the same
dtype and shape)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx")

from onnx_nodes import REFUSED, RUNNERS, NotCovered, check_types, node_cases, refusal, run_case

import dmlpy as dml

DOC = Path(__file__).resolve().parent.parent / "docs" / "onnx.md"


def outside_directml(case) -> str | None:
    try:
        check_types(case.inputs)
        check_types(case.outputs)
    except NotCovered as reason:
        return str(reason)
    return None


def runnable():
    return [case for case in node_cases() if case.op_type in RUNNERS and outside_directml(case) is None]


def assert_like_onnx(ours, theirs, case) -> None:
    ours = np.asarray(ours)
    assert ours.shape == theirs.shape, f"{case.name}: shape {ours.shape}, ONNX's {theirs.shape}"
    assert ours.dtype == theirs.dtype, f"{case.name}: dtype {ours.dtype}, ONNX's {theirs.dtype}"
    if theirs.dtype.kind == "f" or theirs.dtype.name == "bfloat16":
        np.testing.assert_allclose(ours.astype(np.float64), theirs.astype(np.float64), rtol=case.rtol,
                                   atol=case.atol, err_msg=case.name)
    else:
        np.testing.assert_array_equal(ours, theirs, err_msg=case.name)


@pytest.mark.parametrize("case", runnable(), ids=lambda case: case.name)
def test_onnx_node_case(case):
    reason = refusal(case)
    if reason is not None:
        # A DirectML rule refuses it: dmlpy must say so, not compute something else.
        with pytest.raises(dml.DmlError):
            run_case(case)
        return
    try:
        outputs = run_case(case)
    except NotCovered as why:
        pytest.skip(str(why))
    assert len(outputs) == len(case.outputs)
    for ours, theirs in zip(outputs, case.outputs):
        assert_like_onnx(ours, theirs, case)


def test_every_refusal_names_a_case():
    """A pattern in REFUSED that matches nothing is stale (ONNX renamed the case, or it left)."""
    names = [case.name for case in node_cases()]
    stale = [pattern for pattern in REFUSED if not any(re.fullmatch(pattern, name) for name in names)]
    assert not stale


def test_the_counts_in_docs_onnx_md_are_the_suites():
    """docs/onnx.md states how many of ONNX's node tests dmlpy runs; the statement stays true."""
    cases = node_cases()
    with_runner = [case for case in cases if case.op_type in RUNNERS]
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
    stated = re.search(r"runs (\d+) of the (\d+) single-node cases .* refuses (\d+) .* (\d+) lie outside", text,
                       re.S)
    assert stated, "docs/onnx.md lost its counts sentence"
    assert tuple(map(int, stated.groups())) == (outcome["run"], len(cases), outcome["refused"], outcome["outside"])
    for op_type in RUNNERS:
        assert f"`{op_type}`" in text, f"docs/onnx.md does not list {op_type}"
