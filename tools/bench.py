#!/usr/bin/env python3
"""Effective bandwidth of every operator against the same device's own copy limit.

For each operator, data type and layout, at sizes from 256 elements up: the time of the
operator's one recorded submission (GPU timestamps where the device has them, else host
time), the bytes the operation must move over that time, and the ratio to the device's
copy limit. The limit is the fastest of several copy-shader shapes (workgroup size, vectors
per invocation, consecutive or interleaved, 32- or 64-bit components) moving the same bytes;
vkCmdCopyBuffer is shown beside it. The same shapes also run one way, reading without writing
and writing without reading, and /streams sets the operator beside them: the time they take
for the bytes it reads and the bytes it writes, over its own (a device that reads slower
than it writes holds a kernel that reads more than it writes below the copy's ratio).
Every measurement is interleaved: each round runs the operator, every copy shape and
direction, vkCmdCopyBuffer, NumPy and PyTorch (CPU, or CUDA where present) once each, in
that order, so a machine that slows down mid-run slows all of them alike. Ratios are per round; the table
gives their median and their spread (lowest and highest round). A second table gives the
host's cost of one small dispatch through each path, interleaved with a bare kp evaluation.
A GEMM table gives the multiply-add pairs per second of GEMMs (M x N x K pairs each) against
the same device's arithmetic limit, the fastest of several shapes of a shader that performs
as many FP32 multiply-then-add pairs in registers (shaders/multiply_add.comp), interleaved
round by round in the same way, beside NumPy's np.matmul (FP32) and PyTorch's. The graph
table (left out by --no-chains, alone with --graphs-only) sets chains fused into one kernel
beside their operators run one by one, and expressions on four device arrays (deferred,
fused, read back) beside the same front-end calls on NumPy arrays and beside NumPy itself.
Progress goes to standard error (a bar on a terminal, a line per measurement elsewhere), so
standard output holds the report alone.

    python tools/bench.py --quick
    python tools/bench.py --sizes 256,65536,16777216 --json bench.json --plot bench.png
    python tools/bench.py --cases "relu_grad float32 packed" --sizes 16777216 --rounds 9
    python tools/bench.py --replot bench.json --plot bench.png   # redraw only, no run
    python tools/bench.py --graph-compile 1000,4000   # only the time to build and compile large graphs
    python tools/bench.py --gemm-only                 # only the GEMM table (--quick: its small shapes)

Exit status: 0 done, 2 a usage error (including --plot without matplotlib installed).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import math
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import ml_dtypes
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tools"))

from bench_graph_compile import graph_compile_rows, print_graph_compile, print_table  # noqa: E402
from reference import REFERENCES, REFERENCES_F64, REFERENCES_ROWWISE  # noqa: E402
from reference import prelu_grad as reference_prelu_grad  # noqa: E402

import dmlpy as dml  # noqa: E402
from dmlpy.cli.progress import Progress  # noqa: E402
from dmlpy.kernels.codegen import COPY_DIRECTIONS, plan_copy  # noqa: E402
from dmlpy.kernels.yardstick import SHAPES as ARITHMETIC_SHAPES  # noqa: E402
from dmlpy.kernels.yardstick import plan_multiply_add  # noqa: E402
from dmlpy.ops.activations import TABLE  # noqa: E402
from dmlpy.runtime.device_profiles import read_regular_file  # noqa: E402
from dmlpy.runtime.kompute import Launch  # noqa: E402
from dmlpy.runtime.shader_compiler import compile_glsl  # noqa: E402

T = dml.TensorDataType
NUMPY = {T.FLOAT32: np.float32, T.FLOAT16: np.float16, T.BFLOAT16: ml_dtypes.bfloat16, T.INT8: np.int8,
         T.UINT8: np.uint8, T.INT64: np.int64}
CHANNELS = 64
REQUIRED_SCALARS = {"alpha": 1.5, "beta": -0.25}  # for scalars DirectML gives no default


@dataclass(frozen=True)
class Case:
    operator: str  # a name in dml.OPERATORS
    data_type: T
    # packed; transposed-output (inputs row-major, output column-major); transposed-inputs;
    # broadcast (the second input along rows); scalar (the second input one value, as `a + 1`
    # gives); nxc, ncx (PReLU: the slope per channel, the
    # channel innermost or between the batch and the spatial dim); rows (row-wise operators)
    layout: str
    output_type: T | None = None  # CAST's target; else the output's type follows the inputs'

    @property
    def name(self) -> str:
        target = f" to {self.output_type.name.lower()}" if self.output_type else ""
        return f"{self.operator} {self.data_type.name.lower()} {self.layout}{target}"


# Every element-wise operator of the table, packed; the layouts and data types of the
# gradient that started dmlpy; PReLU's reduction; the row-wise operators.
ELEMENTWISE = [name for row in TABLE if row.axes_form is None
               for name in (row.name, f"{row.name}_grad" if row.gradient else None) if name]
# The row-wise operators (softmax family), over rows of ROW_LENGTH elements.
ROWWISE = [name for row in TABLE if row.axes_form is not None for name in (row.name, f"{row.name}_grad")]
ROW_LENGTH = 1024
# The layouts and data types the activations' targets name (RELU_GRAD's packed ratio is the
# element-wise family's yardstick too).
ACTIVATION_TARGET_CASES = [
    *[Case(op, t, "packed") for op in ("relu_grad", "hard_sigmoid_grad") for t in (T.FLOAT32, T.FLOAT16, T.BFLOAT16)],
    Case("relu_grad", T.INT8, "packed"),
    Case("relu_grad", T.FLOAT32, "transposed-output"), Case("relu_grad", T.FLOAT32, "transposed-inputs"),
    Case("relu_grad", T.FLOAT16, "transposed-output"), Case("relu_grad", T.FLOAT16, "transposed-inputs"),
    Case("relu_grad", T.INT8, "transposed-output"),
    Case("relu_grad", T.FLOAT32, "broadcast"), Case("relu_grad", T.FLOAT16, "broadcast"),
    Case("prelu_grad", T.FLOAT32, "ncx"), Case("prelu_grad", T.FLOAT32, "nxc"), Case("prelu_grad", T.FLOAT16, "nxc")]
# The element-wise family's memory-bound binary operators (three streams, as RELU_GRAD's),
# DIVIDE and the transcendental ones (compute-bound on lavapipe), ADD with one operand
# broadcast or a scalar, LESS with a scalar (x < 0: a UINT8 output beside a one-value input),
# and the 64-bit kernel's INT64 arithmetic and conversion.
ELEMENT_WISE_CASES = [
    *[Case(op, t, "packed") for op in ("add", "multiply", "maximum", "less", "where") for t in (T.FLOAT32, T.FLOAT16)],
    Case("logical_and", T.UINT8, "packed"), Case("add", T.FLOAT32, "broadcast"),
    Case("cast", T.FLOAT32, "packed", T.FLOAT16), Case("cast", T.FLOAT16, "packed", T.FLOAT32),
    Case("add", T.FLOAT32, "scalar"), Case("add", T.FLOAT16, "scalar"),
    Case("less", T.FLOAT32, "scalar"), Case("less", T.FLOAT16, "scalar"),
    Case("add", T.INT64, "packed"), Case("cast", T.INT64, "packed", T.FLOAT32),
    *[Case(op, T.FLOAT32, "packed") for op in ("divide", "exp", "log", "element_wise_tanh", "sqrt", "sin", "arctan",
                                               "power", "arctan2", "remainder")]]
# The reductions family on a square tensor: over its last axis ("rows", "rows:FUNCTION" for
# REDUCE), its first ("columns:FUNCTION": strided rows) and every axis ("all:FUNCTION").
REDUCTION_CASES = [
    *[Case("reduce", T.FLOAT32, f"rows:{f}") for f in ("SUM", "MAX", "SUM_SQUARE", "LOG_SUM_EXP")],
    Case("reduce", T.FLOAT16, "rows:SUM"), Case("reduce", T.INT64, "rows:SUM"), Case("reduce", T.FLOAT32, "all:SUM"),
    Case("reduce", T.FLOAT32, "columns:SUM"),
    *[Case(op, T.FLOAT32, "rows") for op in ("argmax", "cumulative_summation", "top_k1")]]
# The optimizer: seven streams (parameters, two moments and the gradient in, three out).
OPTIMIZER_CASES = [Case("adam_optimizer", t, "packed") for t in (T.FLOAT32, T.FLOAT16)]
# Every case a speed target names: the activations'; the element-wise family's binary operators,
# casts and transcendental functions (not DIVIDE, SQRT, REMAINDER, the scalar operands or
# INT64); the reductions' sums, ARGMAX, cumulative sum and the softmax family.
TARGET_CASES = [
    *ACTIVATION_TARGET_CASES,
    *[case for case in ELEMENT_WISE_CASES if case.data_type != T.INT64 and case.layout != "scalar"
      and case.operator not in ("divide", "sqrt", "remainder")],
    *[case for case in REDUCTION_CASES if case.data_type == T.FLOAT32 and case.layout in ("rows:SUM", "all:SUM",
                                                                                        "columns:SUM", "rows")
      and case.operator != "top_k1"],
    *[Case(name, T.FLOAT32, "rows") for name in ROWWISE if "softmax" in name and "hardmax" not in name]]
FULL_CASES = [*ACTIVATION_TARGET_CASES, *ELEMENT_WISE_CASES, *REDUCTION_CASES, *OPTIMIZER_CASES,
              *[Case(name, T.FLOAT32, "packed") for name in ELEMENTWISE
                if name not in ("relu_grad", "hard_sigmoid_grad")],
              *[Case(name, T.FLOAT32, "rows") for name in ROWWISE]]
QUICK_CASES = [Case("relu_grad", T.FLOAT32, "packed"), Case("relu_grad", T.FLOAT16, "packed"),
               Case("relu_grad", T.FLOAT32, "transposed-output"), Case("relu_grad", T.FLOAT32, "broadcast"),
               Case("prelu_grad", T.FLOAT32, "ncx"), Case("hard_swish_grad", T.FLOAT16, "packed")]
CASES = {case.name: case for case in FULL_CASES}

# The copy-shader shapes the yardstick tries: (workgroup size, 16-byte vectors per
# invocation, vectors a workgroup apart rather than consecutive, each vector as two 64-bit
# components: tried where the device has shaderInt64; lavapipe moves a vector component by
# component, and twice as fast in 64-bit ones).
COPY_SHAPES = [(256, 1, False, False), (64, 4, False, False), (256, 4, False, False), (256, 4, True, False),
               (256, 16, False, False), (256, 4, False, True), (256, 16, False, True)]


@dataclass(frozen=True)
class GemmCase:
    """A GEMM, output (M, N) = A (M, K) . B (K, N), A stored (K, M) with trans_a and B (N, K)
    with trans_b, as DirectML's TransA and TransB say."""

    label: str
    data_type: T
    m: int
    n: int
    k: int
    trans_a: bool = False
    trans_b: bool = False

    @property
    def name(self) -> str:
        return f"gemm {self.data_type.name.lower()} {self.m}x{self.n}x{self.k} {self.label}".rstrip()

    @property
    def pairs(self) -> int:
        """Multiply-then-add pairs: one per (row, column, k)."""
        return self.m * self.n * self.k


# Large square GEMMs (compute-bound), and a skinny layer's training step: its forward GEMM
# (X 256x64 . W 64x128) and both gradients' (dX = dY . W^T, dW = X^T . dY).
TRAINING_GEMMS = [GemmCase("forward Y=X.W", T.FLOAT32, 256, 128, 64),
                  GemmCase("dX=dY.W^T (trans_b)", T.FLOAT32, 256, 64, 128, trans_b=True),
                  GemmCase("dW=X^T.dY (trans_a)", T.FLOAT32, 64, 128, 256, trans_a=True)]
GEMM_CASES = [GemmCase("", T.FLOAT32, 1024, 1024, 1024), GemmCase("", T.FLOAT16, 1024, 1024, 1024),
              *TRAINING_GEMMS]
QUICK_GEMM_CASES = TRAINING_GEMMS


def scalars_of(name: str) -> dict[str, float]:
    schema = dml.OPERATORS[name]
    defaults = {f.name: f.default for f in dataclasses.fields(schema.desc_class)}
    return {s.name: REQUIRED_SCALARS[s.name] if defaults[s.name] is dataclasses.MISSING else defaults[s.name]
            for s in schema.scalars}


@dataclass
class Row:
    case: str
    elements: int
    bytes_moved: int
    median_ms: float  # the operator's time, median over rounds
    gbps: float  # bytes_moved over median_ms
    copy_ratio: float  # median over rounds of (our bandwidth / the best copy shader's that round)
    copy_ratio_low: float  # the lowest and highest round
    copy_ratio_high: float
    copy_gbps: float  # the best copy shader's bandwidth, median over rounds
    copy_shape: str  # the shape that was fastest in most rounds
    copy_buffer_ratio: float  # our bandwidth / vkCmdCopyBuffer's, median over rounds
    numpy_ratio: float | None  # their time / ours, median over rounds (above 1: dmlpy faster)
    torch_ratio: float | None
    # The time the fastest one-way copy shaders take to read our bytes read and write our bytes
    # written, over ours, median over rounds (1: as fast as this device reads and writes those
    # bytes apart); the one-way shaders' bandwidths, median over rounds. None in reports
    # written before these figures.
    streams_ratio: float | None = None
    read_gbps: float | None = None
    write_gbps: float | None = None


def shape_of(case: Case, count: int) -> tuple[int, ...]:
    if case.layout == "nxc":
        return (max(1, count // CHANNELS), CHANNELS)
    if case.layout == "ncx":
        return (1, CHANNELS, max(1, count // CHANNELS))
    if case.layout == "packed":
        return (count,)
    if case.operator in REDUCTION_OPERATORS:
        side = max(1, int(round(count ** 0.5)))
        return (count,) if case.layout.startswith("all:") else (side, side)
    if case.layout.startswith("rows"):
        return (max(1, count // ROW_LENGTH), ROW_LENGTH)
    side = max(1, int(round(count ** 0.5)))
    return (side, side)


def build(case: Case, count: int):
    """The desc for a case (its strides realise the layout), its elements, the bytes it must
    move and how many of them it reads."""
    sizes = shape_of(case, count)
    desc = dml.BufferTensorDesc
    schema = dml.OPERATORS[case.operator]
    t = case.data_type
    if schema.family.name == "reductions":  # over the last axis, or every axis for "all:"
        op = reduction_desc(schema, case, sizes)
    elif schema.family.name == "optimizers":  # ADAM_OPTIMIZER's 4-D tensors and its one-element step
        sizes = (1,) * (4 - len(sizes)) + sizes
        tensor, step = desc(t, sizes), desc(t, (1, 1, 1, 1))
        op = schema.desc_class(*[step if f.name == "training_step_tensor" else tensor for f in schema.tensors],
                               learning_rate=1e-3)
    elif case.layout in ("nxc", "ncx"):  # PReLU: the slope broadcast but along channels, its gradient one per channel
        slope_strides, channel_sizes = ((0, 1), (1, CHANNELS)) if case.layout == "nxc" else \
            ((0, 1, 0), (1, CHANNELS, 1))
        op = schema.desc_class(desc(t, sizes), desc(t, sizes, slope_strides), desc(t, sizes), desc(t, sizes),
                               desc(t, channel_sizes))
    else:
        column_major = (1, sizes[0])
        # A tensor of a fixed set of types (IF's condition, a comparison's output) takes the first.
        own = [f.data_types[0] if f.data_types and t not in f.data_types else t for f in schema.tensors]
        second = {"broadcast": (0, 1), "scalar": (0, 0)}.get(case.layout)
        inputs = [desc(own[k], sizes, column_major if case.layout == "transposed-inputs" else
                       second if k == 1 else None) for k in range(len(schema.inputs))]
        output = desc(case.output_type or own[-1], sizes, column_major if case.layout == "transposed-output" else None)
        op = schema.desc_class(*inputs, output, **scalars_of(case.operator))
    elements = math.prod(sizes)

    def bytes_of(fields):
        return sum(min(getattr(op, f.name).total_tensor_size_in_bytes, elements * getattr(op, f.name).element_size)
                   for f in fields)
    return op, elements, bytes_of(schema.tensors), bytes_of(schema.inputs)


TOP_K = 8  # what the top_k cases select from each row
REDUCTION_OPERATORS = {name for name, schema in dml.OPERATORS.items() if schema.family.name == "reductions"}


def reduction_desc(schema, case: Case, sizes: tuple[int, ...]):
    """A reductions-family desc over the case's last axis (REDUCE over every axis for "all:"):
    its fields from the layout, its outputs shaped and typed as the schema says."""
    t, last = case.data_type, len(sizes) - 1
    axes = tuple(range(len(sizes))) if case.layout.startswith("all:") else (0,) if case.layout.startswith(
        "columns:") else (last,)
    candidates = {"axes": axes, "axis": last,
                  "k": TOP_K, "function": case.layout.partition(":")[2] or None}
    names = {f.name for f in dataclasses.fields(schema.desc_class)}
    fields = {name: value for name, value in candidates.items() if name in names}
    inputs = {f.name: dml.BufferTensorDesc(t, sizes) for f in schema.inputs}
    shapes = schema.output_sizes(inputs, fields) if schema.output_sizes else {}
    outputs = {}
    for field in schema.outputs:
        own = schema.output_data_type(inputs, fields) if schema.output_data_type else \
            field.data_types[0] if field.data_types and t not in field.data_types else t
        outputs[field.name] = dml.BufferTensorDesc(own, shapes.get(field.name, sizes))
    return schema.desc_class(**inputs, **outputs, **fields)


def host_seconds(function):
    def run():
        start = time.perf_counter()
        function()
        return time.perf_counter() - start
    return run


class Device:
    """The benchmark's view of a dmlpy device: timed runs of tables and of copy shaders."""

    def __init__(self, device):
        self.device = device
        self.context = device.context  # kp-level access: timestamps and the copy yardsticks
        self.gpu_timer = self.context.timestamps_usable

    def timed(self, dispatch):
        """A run of a recorded dispatch, returning its seconds (GPU time where the device has
        timestamps)."""
        def run():
            start = time.perf_counter()
            self.context.run(dispatch)
            return self.context.gpu_seconds(dispatch) if self.gpu_timer else time.perf_counter() - start
        return run

    def table_run(self, table):
        """The table's one submission (every stage, barriers between), timestamped."""
        return self.timed(self.context.record(table.steps, timestamped=self.gpu_timer))

    def copy_runs(self, byte_count: int):
        """({"copy SHAPE", "read SHAPE", "write SHAPE": run}, vkCmdCopyBuffer run, bytes each
        copy moves, buffers): each copy reads and writes about byte_count / 2 bytes, each
        one-way shader reads (or writes) byte_count / 2 bytes alone."""
        words = max(4, byte_count // 8 // 4 * 4)
        source, destination = (self.device.create_buffer(words * 4) for _ in range(2))
        shaders = {}
        for workgroup_size, vectors, interleaved, words_64 in COPY_SHAPES:
            if words_64 and not self.device.adapter.shader_int64:
                continue
            name = f"{workgroup_size}x{vectors}{'i' if interleaved else ''}{'w' if words_64 else ''}"
            for direction in COPY_DIRECTIONS:
                plan = plan_copy(words, self.device.adapter, workgroup_size, vectors, interleaved, words_64, direction)
                (stage,) = plan.stages
                algorithms = self.context.create_algorithms(compile_glsl(stage.source()).spirv, [Launch(
                    [source.segments[0], destination.segments[0]], stage.workgroups(self.device.adapter, words),
                    np.array([words], np.uint32))])
                recorded = self.context.record([algorithms], timestamped=self.gpu_timer)
                shaders[f"{direction} {name}"] = self.timed(recorded)
        buffer_copy = self.timed(self.context.record_buffer_copy(source.segments[0], destination.segments[0],
                                                                 self.gpu_timer))
        return shaders, buffer_copy, 8 * words, (source, destination)

    def arithmetic_runs(self, pair_count: int):
        """({shape name: (run, pairs it performs)}, buffers): the arithmetic yardstick in each
        of its shapes (yardstick.SHAPES: chains per invocation, pairs of each unrolled in a
        loop trip; the planner picks the grid and the loop's length), each performing at least
        pair_count FP32 multiply-add pairs."""
        runs, buffers = {}, []
        for accumulators, unroll in ARITHMETIC_SHAPES:
            plan = plan_multiply_add(pair_count, self.device.adapter, accumulators=accumulators, unroll=unroll)
            (stage,) = plan.stages
            result = self.device.create_buffer(4 * stage.invocations)
            buffers.append(result)
            algorithms = self.context.create_algorithms(compile_glsl(stage.source()).spirv, [Launch(
                [result.segments[0]], stage.workgroups(self.device.adapter, plan.element_count),
                np.array(plan.scalar_bits, np.uint32))])
            runs[f"{accumulators}x{unroll}"] = (
                self.timed(self.context.record([algorithms], timestamped=self.gpu_timer)), plan.element_count)
        return runs, buffers


POSITIVE_DOMAIN = ("log", "sqrt", "power")


def arrays_for(case: Case, count: int) -> list[np.ndarray]:
    """The case's inputs as NumPy arrays in the same layout."""
    schema = dml.OPERATORS[case.operator]
    sizes = shape_of(case, count)
    rng = np.random.default_rng(0)
    arrays = [(rng.standard_normal(sizes) * 3).astype(NUMPY[case.data_type]) if not f.data_types
              or case.data_type in f.data_types else rng.integers(0, 2, sizes).astype(NUMPY[f.data_types[0]])
              for f in schema.inputs]
    if case.operator in POSITIVE_DOMAIN:  # negative inputs would time the NaN shortcut
        arrays[0] = np.abs(arrays[0])
    if case.layout == "transposed-inputs":
        arrays = [np.asfortranarray(a) for a in arrays]
    elif case.layout in ("broadcast", "nxc"):
        arrays[1] = np.broadcast_to(arrays[1][0], sizes)
    elif case.layout == "scalar":
        arrays[1] = np.broadcast_to(arrays[1][:1, :1], sizes)
    elif case.layout == "ncx":
        arrays[1] = np.broadcast_to(arrays[1][:, :, :1], sizes)
    return arrays


def numpy_run(case: Case, count: int):
    """NumPy's expression of the same operation on the same layout (the independent reference
    of the tests), writing the result in the case's output layout."""
    arrays = arrays_for(case, count)
    if case.operator in NUMPY_REDUCTIONS:  # results of their own shapes and types
        call = NUMPY_REDUCTIONS[case.operator if case.operator != "reduce" else case.layout]
        return host_seconds(lambda: call(*arrays))
    order = "F" if case.layout == "transposed-output" else "C"
    output = dml.OPERATORS[case.operator].outputs[0]
    own = output.data_types[0] if output.data_types and case.data_type not in output.data_types else case.data_type
    out_type = case.output_type or own
    out = np.empty(shape_of(case, count), NUMPY[out_type], order=order)
    if case.operator in NUMPY_ELEMENT_WISE:
        function = NUMPY_ELEMENT_WISE[case.operator]
        return host_seconds(lambda: np.copyto(out, function(*arrays), casting="unsafe"))
    if case.operator in REFERENCES_ROWWISE:
        reference = REFERENCES_ROWWISE[case.operator]
        return host_seconds(lambda: np.copyto(out, reference(*arrays, axes=(1,))))
    reference = REFERENCES.get(case.operator) or REFERENCES_F64.get(case.operator)
    if reference is not None:
        scalars = scalars_of(case.operator)
        return host_seconds(lambda: np.copyto(out, reference(*arrays, **scalars)))
    if case.operator in NUMPY_OPTIMIZERS:
        return host_seconds(lambda: NUMPY_OPTIMIZERS[case.operator](*arrays))
    x, slope, dy = arrays
    axes = (0,) if case.layout == "nxc" else (0, 2)
    return host_seconds(lambda: (np.copyto(out, reference_prelu_grad(x, slope, dy, axes)[0])))


# NumPy's functions for the element-wise family's benchmark cases.
NUMPY_ELEMENT_WISE = {"add": np.add, "multiply": np.multiply, "divide": np.divide, "maximum": np.maximum,
                      "less": np.less, "logical_and": np.logical_and, "where": lambda c, a, b: np.where(c != 0, a, b),
                      "cast": lambda x: x,  # np.copyto converts to the output's type
                      "exp": np.exp, "log": np.log, "element_wise_tanh": np.tanh, "sqrt": np.sqrt, "sin": np.sin,
                      "arctan": np.arctan, "power": np.power, "arctan2": np.arctan2, "remainder": np.remainder}


def _adam(x, m, v, g, step):
    """One Adam step at T = 1 in NumPy (new parameters and moments), as PyTorch's CPU loop computes it."""
    m = 0.9 * m + 0.1 * g
    v = 0.999 * v + 0.001 * g * g
    return x - 1e-3 * np.sqrt(1 - 0.999) / (1 - 0.9) * m / (np.sqrt(v) + 1e-8), m, v


NUMPY_OPTIMIZERS = {"adam_optimizer": _adam}


def _log_sum_exp(x):
    m = x.max(axis=-1, keepdims=True)
    return m + np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


# NumPy's forms of the reductions family's cases (by operator, or REDUCE's by layout).
NUMPY_REDUCTIONS = {
    "reduce": None, "rows:SUM": lambda x: x.sum(axis=-1), "rows:MAX": lambda x: x.max(axis=-1),
    "rows:SUM_SQUARE": lambda x: np.square(x).sum(axis=-1), "rows:LOG_SUM_EXP": _log_sum_exp,
    "all:SUM": lambda x: x.sum(), "columns:SUM": lambda x: x.sum(axis=0), "argmax": lambda x: x.argmax(axis=-1),
    "cumulative_summation": lambda x: np.cumsum(x, axis=-1),
    "top_k1": lambda x: np.take_along_axis(x, np.argpartition(x, -TOP_K, axis=-1)[:, -TOP_K:], -1)}


# PyTorch's own kernels for the same operations, where it has one.
TORCH = {
    "relu_grad": lambda torch, x, dy: torch.ops.aten.threshold_backward(dy, x, 0),
    "hard_sigmoid_grad": lambda torch, x, dy: torch.ops.aten.hardsigmoid_backward(dy, x),
    "hard_swish_grad": lambda torch, x, dy: torch.ops.aten.hardswish_backward(dy, x),
    "leaky_relu_grad": lambda torch, x, dy: torch.ops.aten.leaky_relu_backward(dy, x, 0.01, False),
    "relu": lambda torch, x: torch.relu(x),
    "hard_swish": lambda torch, x: torch.nn.functional.hardswish(x),
    "prelu_grad": lambda torch, x, slope, dy: torch.ops.aten._prelu_kernel_backward(dy, x, slope),
    "softmax": lambda torch, x: torch.softmax(x, -1),
    "log_softmax": lambda torch, x: torch.log_softmax(x, -1),
    "softmax_grad": lambda torch, y, dy: torch.ops.aten._softmax_backward_data(dy, y, -1, y.dtype),
    "log_softmax_grad": lambda torch, y, dy: torch.ops.aten._log_softmax_backward_data(dy, y, -1, y.dtype),
}


TORCH_REDUCTIONS = {
    "rows:SUM": lambda torch, x: torch.sum(x, -1), "rows:MAX": lambda torch, x: torch.amax(x, -1),
    "rows:SUM_SQUARE": lambda torch, x: torch.sum(x * x, -1),
    "rows:LOG_SUM_EXP": lambda torch, x: torch.logsumexp(x, -1),
    "all:SUM": lambda torch, x: torch.sum(x), "columns:SUM": lambda torch, x: torch.sum(x, 0),
    "argmax": lambda torch, x: torch.argmax(x, -1),
    "cumulative_summation": lambda torch, x: torch.cumsum(x, -1), "top_k1": lambda torch, x: torch.topk(x, TOP_K, -1)}
TORCH.update({"reduce": None, **{name: call for name, call in TORCH_REDUCTIONS.items() if ":" not in name}})


def torch_run(case: Case, count: int):
    try:
        import torch
    except ImportError:
        return None
    dtype = {T.FLOAT32: torch.float32, T.FLOAT16: torch.float16, T.BFLOAT16: torch.bfloat16}.get(case.data_type)
    if case.operator not in TORCH or dtype is None or case.layout.partition(":")[0] not in \
            ("packed", "nxc", "ncx", "rows", "all", "columns"):
        return None
    target = "cuda" if torch.cuda.is_available() else "cpu"
    arrays = arrays_for(case, count)
    if case.layout in ("nxc", "ncx"):  # the slope as PyTorch takes it: one per channel, broadcast
        arrays[1] = arrays[1][:1] if case.layout == "nxc" else arrays[1][:, :, :1]
    tensors = [torch.from_numpy(np.ascontiguousarray(a).astype(np.float32)).to(target).to(dtype) for a in arrays]
    sync = torch.cuda.synchronize if target == "cuda" else (lambda: None)
    call = TORCH[case.operator] or TORCH_REDUCTIONS[case.layout]
    return host_seconds(lambda: (call(torch, *tensors), sync()))


def spread(values: list[float]) -> tuple[float, float, float]:
    """(median, lowest, highest)."""
    return statistics.median(values), min(values), max(values)


def overhead_rows(bench: Device, rounds: int) -> list[dict]:
    """Host cost of one 256-element dispatch through each path, interleaved round by round
    with a bare kp evaluation of the same shader; each round takes the median of 25 calls."""
    device = bench.device
    tensor = dml.BufferTensorDesc(T.FLOAT32, (256,))
    desc = dml.ActivationReluGradOperatorDesc(tensor, tensor, tensor)
    compiled = device.compile_operator(device.create_operator(desc))
    x = np.linspace(-1, 1, 256, dtype=np.float32)
    buffers = [device.create_buffer(1024) for _ in range(3)]
    table = device.create_binding_table(compiled, inputs=buffers[:2], outputs=buffers[2:])
    # A chain: each dispatch reads the gradient the one before wrote (a barrier per link).
    chain_length = 20
    chain = device.create_command_list()
    gradients = [buffers[1], *(device.create_buffer(1024) for _ in range(chain_length))]
    for k in range(chain_length):
        chain.record_dispatch(device.create_binding_table(compiled, inputs=[buffers[0], gradients[k]],
                                                          outputs=[gradients[k + 1]]))
    bare = bench.context.record(table.steps)
    paths = {
        "bare kp sequence eval": (lambda: bench.context.run(bare), 1),
        "execute(binding table)": (lambda: device.execute(table), 1),
        "NumPy front end (relu_grad)": (lambda: dml.relu_grad(x, x, device=device), 1),
        f"command list, a chain of {chain_length} (per dispatch)": (lambda: device.execute(chain), chain_length),
    }
    samples = {name: [] for name in paths}
    for _ in range(rounds + 1):  # the first round warms up
        for name, (call, per_call) in paths.items():
            samples[name].append(statistics.median(host_seconds(call)() for _ in range(25)) / per_call)
    base = samples["bare kp sequence eval"][1:]
    rows = []
    for name, values in samples.items():
        values = values[1:]
        ratios = [v / b for v, b in zip(values, base)]
        rows.append({"path": name, "microseconds_per_dispatch": statistics.median(values) * 1e6,
                     "ratio_to_bare": statistics.median(ratios), "ratio_low": min(ratios), "ratio_high": max(ratios)})
    rows.append({"path": "command list batch_count (submissions per replay)", "microseconds_per_dispatch": 0.0,
                 "ratio_to_bare": float(chain.batch_count), "ratio_low": float(chain.barrier_count),
                 "ratio_high": float(chain.barrier_count)})
    return rows


# Chains of element-wise operators (dmlpy.graph.chain: each reads the one before as its last
# input, and the chain's input X as the others): one memory-bound, one with transcendentals.
CHAINS = {
    "linear > leaky_relu > hard_sigmoid > relu_grad": [("linear", {"alpha": 2.0, "beta": 1.0}), ("leaky_relu", {}),
                                                       ("hard_sigmoid", {}), ("relu_grad", {})],
    "linear > elu > scaled_tanh > relu_grad": [("linear", {"alpha": 2.0, "beta": 1.0}), ("elu", {}),
                                               ("scaled_tanh", {}), ("relu_grad", {})],
}


def front_end_chain(x, steps, device):
    """The chain through the NumPy front ends, on NumPy arrays or on device arrays."""
    value = x
    for operator, fields in steps:
        schema = dml.OPERATORS[operator]
        value = getattr(dml, operator)(*[x] * (len(schema.inputs) - 1), value, **fields, device=device)
    return value.compute() if isinstance(value, dml.DeviceArray) else value


def chain_rows(device, sizes: list[int], repeats: int, progress: Progress | None = None) -> list[dict]:
    """Each chain compiled as a graph (one fused kernel) against its operators' binding tables
    executed one after another, timed interleaved through device.execute (host time); and the
    chain through the front ends on device arrays against the same on NumPy arrays."""
    rows = []
    for name, steps in CHAINS.items():
        for count in sizes:
            if progress:
                progress.step(f"graph {name} at {count} elements")
            desc = dml.BufferTensorDesc(T.FLOAT32, (count,))
            builder = dml.GraphBuilder(device)
            x = builder.input(desc)
            fused = builder.build([dml.graph.chain(x, steps)])
            source = device.create_buffer(desc.total_tensor_size_in_bytes)
            source.write((np.random.default_rng(0).standard_normal(count) * 3).astype(np.float32))
            results = [device.create_buffer(desc.total_tensor_size_in_bytes) for _ in range(3)]
            fused_table = device.create_binding_table(fused, [source], [results[0]])
            tables, previous = [], source
            for k, (operator, fields) in enumerate(steps):
                schema = dml.OPERATORS[operator]
                op = device.create_operator(schema.desc_class(*[desc] * len(schema.tensors), **fields))
                target = results[1 + k % 2]
                inputs = [source] * (len(schema.inputs) - 1) + [previous]
                tables.append(device.create_binding_table(device.compile_operator(op), inputs, [target]))
                previous = target
            fused_times, unfused_times = [], []
            for repeat in range(repeats + 1):  # the first round warms up
                start = time.perf_counter()
                device.execute(fused_table)
                middle = time.perf_counter()
                for table in tables:
                    device.execute(table)
                end = time.perf_counter()
                if repeat:
                    fused_times.append(middle - start)
                    unfused_times.append(end - middle)
            same = np.array_equal(results[0].read(np.uint32, count), previous.read(np.uint32, count))
            fused_ms, unfused_ms = statistics.median(fused_times) * 1e3, statistics.median(unfused_times) * 1e3
            host = (np.random.default_rng(0).standard_normal(count) * 3).astype(np.float32)
            resident = dml.asarray(host, device=device)
            resident_times, host_times = [], []
            for repeat in range(repeats + 1):  # the same chain through the front end, interleaved
                start = time.perf_counter()
                on_device = front_end_chain(resident, steps, device)
                middle = time.perf_counter()
                on_host = front_end_chain(host, steps, device)
                end = time.perf_counter()
                if repeat:
                    resident_times.append(middle - start)
                    host_times.append(end - middle)
            same = same and np.array_equal(on_device.numpy().view(np.uint32), on_host.view(np.uint32))
            resident_ms, host_ms = statistics.median(resident_times) * 1e3, statistics.median(host_times) * 1e3
            rows.append({"chain": name, "elements": count, "fused_ms": fused_ms, "unfused_ms": unfused_ms,
                         "speedup": unfused_ms / fused_ms, "device_arrays_ms": resident_ms,
                         "numpy_arrays_ms": host_ms, "device_arrays_speedup": host_ms / resident_ms,
                         "same_bits": same})
            del resident, on_device
            for buffer in (source, *results):
                buffer.destroy()
    return rows


# Expressions on several arrays, written once in the front ends' calls: on device arrays they
# defer and fuse into one kernel; on NumPy arrays the same calls run one by one. Beside them,
# the expression in NumPy itself. The first is the element-wise issue's chain; the second a
# leaky ReLU and a scaled residual whose four Python scalars are inputs of the kernel too.
EXPRESSIONS = {
    "where(a < 0, (a * b + c).astype(f16), c.astype(f16))": (
        lambda a, b, c, d: dml.where(dml.less(a, 0.0), dml.cast(dml.add(dml.multiply(a, b), c), np.float16),
                                     dml.cast(c, np.float16)),
        lambda a, b, c, d: np.where(a < 0, (a * b + c).astype(np.float16), c.astype(np.float16))),
    "leaky(a * b + c) + d * 0.5 - 0.25": (
        lambda a, b, c, d: dml.subtract(dml.add(dml.where(
            dml.greater(dml.add(dml.multiply(a, b), c), 0.0), dml.add(dml.multiply(a, b), c),
            dml.multiply(dml.add(dml.multiply(a, b), c), 0.01)), dml.multiply(d, 0.5)), 0.25),
        lambda a, b, c, d: np.where(a * b + c > 0, a * b + c, (a * b + c) * np.float32(0.01))
        + d * np.float32(0.5) - np.float32(0.25)),
}


def expression_rows(device, sizes: list[int], repeats: int, progress: Progress | None = None) -> list[dict]:
    """Each expression on device arrays (its result read back) against the same calls on NumPy
    arrays and against NumPy itself, interleaved round by round (host time)."""
    rows = []
    for name, (through_dmlpy, in_numpy) in EXPRESSIONS.items():
        for count in sizes:
            if progress:
                progress.step(f"expression {name} at {count} elements")
            rng = np.random.default_rng(1)
            hosts = [(rng.standard_normal(count) * 3).astype(np.float32) for _ in range(4)]
            resident = [dml.asarray(h, device=device) for h in hosts]
            times: dict[str, list[float]] = {"device": [], "host": [], "numpy": []}
            for repeat in range(repeats + 1):  # the first round warms up
                marks = [time.perf_counter()]
                on_device = through_dmlpy(*resident).numpy()
                marks.append(time.perf_counter())
                on_host = through_dmlpy(*hosts)
                marks.append(time.perf_counter())
                in_numpy(*hosts)
                marks.append(time.perf_counter())
                if repeat:
                    for k, key in enumerate(times):
                        times[key].append(marks[k + 1] - marks[k])
            device_ms, host_ms, numpy_ms = (statistics.median(times[key]) * 1e3 for key in times)
            rows.append({"expression": name, "elements": count, "device_arrays_ms": device_ms,
                         "numpy_arrays_ms": host_ms, "device_arrays_speedup": host_ms / device_ms,
                         "numpy_ms": numpy_ms, "same_bits": bool(np.array_equal(on_device, on_host))})
            del resident
    return rows


def run_case(bench: Device, case: Case, count: int, rounds: int) -> Row:
    """The operator, every copy shape both ways and one way, vkCmdCopyBuffer, NumPy and PyTorch, interleaved:
    one run of each per round (each run the median of several where one is short)."""
    device = bench.device
    op, elements, moved, read = build(case, count)
    compiled = device.compile_operator(device.create_operator(op))
    buffers = [device.create_buffer(getattr(op, f.name).total_tensor_size_in_bytes) for f in op.schema.tensors]
    inputs = len(op.schema.inputs)
    temporary_size = compiled.binding_properties.temporary_resource_size
    table = device.create_binding_table(compiled, inputs=buffers[:inputs], outputs=buffers[inputs:],
                                        temporary=device.create_buffer(temporary_size) if temporary_size else None)
    shaders, buffer_copy, copy_bytes, copy_buffers = bench.copy_runs(moved)
    runs = {"op": bench.table_run(table), **shaders, "vkcopy": buffer_copy, "numpy": numpy_run(case, count)}
    torch_call = torch_run(case, count)
    if torch_call:
        runs["torch"] = torch_call
    for run in runs.values():  # warm-up: pipeline creation and first-touch costs stay out
        run()
    # Short runs are repeated within a round (median), so one round takes about 10 ms or more.
    repeat = max(1, min(25, int(0.01 / max(runs["op"](), 1e-6))))
    samples = {name: [] for name in runs}
    for _ in range(rounds):
        for name, run in runs.items():
            samples[name].append(statistics.median(run() for _ in range(repeat)))
    for buffer in (*buffers, *copy_buffers):
        buffer.destroy()
    ours = samples["op"]

    def fastest(direction):  # per round, the name of the fastest copy shape run that way
        names = [name for name in runs if name.startswith(f"{direction} ")]
        return [min(names, key=lambda name: samples[name][r]) for r in range(rounds)]
    best = fastest("copy")
    ratios = [(moved / ours[r]) / (copy_bytes / samples[best[r]][r]) for r in range(rounds)]
    median_ratio, low, high = spread(ratios)
    # The one-way shaders each move copy_bytes / 2: the time they would take for our reads
    # and our writes, round by round, over ours.
    reads = [samples[name][r] for r, name in enumerate(fastest("read"))]
    writes = [samples[name][r] for r, name in enumerate(fastest("write"))]
    one_way = copy_bytes / 2
    streams = statistics.median((read / one_way * reads[r] + (moved - read) / one_way * writes[r]) / ours[r]
                                for r in range(rounds))

    def time_ratio(name):
        return statistics.median(t / o for t, o in zip(samples[name], ours)) if name in samples else None
    median = statistics.median(ours)
    return Row(case.name, elements, moved, median * 1e3, moved / median / 1e9, median_ratio, low, high,
               statistics.median(copy_bytes / samples[best[r]][r] for r in range(rounds)) / 1e9,
               max(set(best), key=best.count).removeprefix("copy "),
               statistics.median((moved / o) / (copy_bytes / v) for o, v in zip(ours, samples["vkcopy"])),
               time_ratio("numpy"), time_ratio("torch"), streams,
               statistics.median(one_way / t for t in reads) / 1e9,
               statistics.median(one_way / t for t in writes) / 1e9)


@dataclass
class GemmRow:
    case: str
    m: int
    n: int
    k: int
    pairs: int  # multiply-then-add pairs, M * N * K
    median_ms: float  # the GEMM's time, median over rounds
    gpairs: float  # pairs over median_ms, in 10^9 pairs a second (twice that in GFLOP/s)
    arith_ratio: float  # median over rounds of (our pairs/s / the fastest yardstick shape's that round)
    arith_ratio_low: float  # the lowest and highest round
    arith_ratio_high: float
    arith_gpairs: float  # the fastest yardstick shape's pairs/s (10^9), median over rounds
    arith_shape: str  # the shape that was fastest in most rounds (chains x pairs unrolled)
    numpy_ms: float | None  # np.matmul on FP32 copies of the inputs, median over rounds
    numpy_ratio: float | None  # their time / ours, median over rounds (above 1: dmlpy faster)
    torch_ms: float | None
    torch_ratio: float | None
    relative_error: float  # the largest |ours - NumPy's FP64 product| over the largest |product|


def gemm_operands(case: GemmCase) -> tuple[np.ndarray, np.ndarray]:
    """A and B as stored (A (K, M) with trans_a, B (N, K) with trans_b), standard normal, in
    the case's data type: no subnormal operand, product or partial sum."""
    rng = np.random.default_rng(0)
    a_sizes = (case.k, case.m) if case.trans_a else (case.m, case.k)
    b_sizes = (case.n, case.k) if case.trans_b else (case.k, case.n)
    return (rng.standard_normal(a_sizes).astype(NUMPY[case.data_type]),
            rng.standard_normal(b_sizes).astype(NUMPY[case.data_type]))


def gemm_desc(case: GemmCase):
    tensor = dml.BufferTensorDesc
    t = case.data_type
    a_sizes = (case.k, case.m) if case.trans_a else (case.m, case.k)
    b_sizes = (case.n, case.k) if case.trans_b else (case.k, case.n)
    transform = dml.MatrixTransform
    return dml.GemmOperatorDesc(tensor(t, a_sizes), tensor(t, b_sizes), None, tensor(t, (case.m, case.n)),
                                trans_a=transform.TRANSPOSE if case.trans_a else transform.NONE,
                                trans_b=transform.TRANSPOSE if case.trans_b else transform.NONE,
                                alpha=1.0, beta=0.0, fused_activation=None)


def gemm_torch_run(case: GemmCase, a: np.ndarray, b: np.ndarray):
    """torch.matmul: on the GPU in the case's data type where CUDA is present, else on the CPU
    in FP32 (as NumPy's); None without PyTorch."""
    try:
        import torch
    except ImportError:
        return None
    cuda = torch.cuda.is_available()
    dtype = {T.FLOAT32: torch.float32, T.FLOAT16: torch.float16}[case.data_type] if cuda else torch.float32
    a_tensor, b_tensor = (torch.from_numpy(x.astype(np.float32)).to("cuda" if cuda else "cpu").to(dtype)
                          for x in (a, b))
    left, right = a_tensor.t() if case.trans_a else a_tensor, b_tensor.t() if case.trans_b else b_tensor
    out = torch.empty((case.m, case.n), dtype=dtype, device=a_tensor.device)
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    return host_seconds(lambda: (torch.matmul(left, right, out=out), sync()))


def run_gemm_case(bench: Device, case: GemmCase, rounds: int) -> GemmRow:
    """The GEMM's binding table, every arithmetic yardstick shape (as many pairs), NumPy and
    PyTorch, interleaved: one run of each per round (each the median of several where short)."""
    device = bench.device
    desc = gemm_desc(case)
    compiled = device.compile_operator(device.create_operator(desc))
    a, b = gemm_operands(case)
    a_buffer, b_buffer = device.create_buffer(desc.a_tensor.total_tensor_size_in_bytes), \
        device.create_buffer(desc.b_tensor.total_tensor_size_in_bytes)
    a_buffer.write(a)
    b_buffer.write(b)
    out = device.create_buffer(desc.output_tensor.total_tensor_size_in_bytes)
    temporary_size = compiled.binding_properties.temporary_resource_size
    temporary = device.create_buffer(temporary_size) if temporary_size else None
    table = device.create_binding_table(compiled, inputs=[a_buffer, b_buffer, None], outputs=[out],
                                        temporary=temporary)
    arithmetic, arithmetic_buffers = bench.arithmetic_runs(case.pairs)
    left, right = a.astype(np.float32), b.astype(np.float32)
    left, right = left.T if case.trans_a else left, right.T if case.trans_b else right
    numpy_out = np.empty((case.m, case.n), np.float32)
    runs = {"op": bench.table_run(table), **{f"arith {name}": run for name, (run, _) in arithmetic.items()},
            "numpy": host_seconds(lambda: np.matmul(left, right, out=numpy_out))}
    torch_call = gemm_torch_run(case, a, b)
    if torch_call:
        runs["torch"] = torch_call
    for run in runs.values():  # warm-up: pipeline creation and first-touch costs stay out
        run()
    ours_result = out.read(NUMPY[case.data_type], case.m * case.n).reshape(case.m, case.n).astype(np.float64)
    exact = left.astype(np.float64) @ right.astype(np.float64)
    relative_error = float(np.max(np.abs(ours_result - exact)) / max(np.max(np.abs(exact)), 1e-30))
    repeat = max(1, min(25, int(0.01 / max(runs["op"](), 1e-6))))
    samples = {name: [] for name in runs}
    for _ in range(rounds):
        for name, run in runs.items():
            samples[name].append(statistics.median(run() for _ in range(repeat)))
    for buffer in (a_buffer, b_buffer, out, *([temporary] if temporary else []), *arithmetic_buffers):
        buffer.destroy()
    ours = samples["op"]
    rates = {name: [arithmetic[name][1] / t for t in samples[f"arith {name}"]] for name in arithmetic}
    best = [max(rates, key=lambda name: rates[name][r]) for r in range(rounds)]
    ratio, low, high = spread([(case.pairs / ours[r]) / rates[best[r]][r] for r in range(rounds)])

    def median_of(name):
        return statistics.median(samples[name]) * 1e3 if name in samples else None

    def time_ratio(name):
        return statistics.median(t / o for t, o in zip(samples[name], ours)) if name in samples else None
    median = statistics.median(ours)
    return GemmRow(case.name, case.m, case.n, case.k, case.pairs, median * 1e3, case.pairs / median / 1e9,
                   ratio, low, high, statistics.median(rates[best[r]][r] for r in range(rounds)) / 1e9,
                   max(set(best), key=best.count), median_of("numpy"), time_ratio("numpy"), median_of("torch"),
                   time_ratio("torch"), relative_error)


def ratio_cell(value: float | None) -> str:
    """A NumPy or torch time over ours, or '-' where that library is not installed."""
    return f"{value:6.2f}x" if value is not None else f"{'-':>7}"


def print_gemm(rows: list[GemmRow]) -> None:
    print(f"{'GEMM (M x N x K): against the arithmetic yardstick':58} {'median ms':>10} {'Gpair/s':>8} "
          f"{'/arith':>6} {'spread':>11} {'arith Gpair/s':>13} {'shape':>5} {'NumPy ms':>9} {'NumPy':>7} "
          f"{'torch':>7}")
    for r in rows:
        print(f"{r.case:58} {r.median_ms:>10.3f} {r.gpairs:>8.2f} {r.arith_ratio:>6.3f} "
              f"{f'{r.arith_ratio_low:.3f}-{r.arith_ratio_high:.3f}':>11} {r.arith_gpairs:>13.2f} "
              f"{r.arith_shape:>5} {r.numpy_ms:>9.3f} {ratio_cell(r.numpy_ratio)} {ratio_cell(r.torch_ratio)}")
    print("\nGpair/s: M*N*K multiply-add pairs (2 FLOP each) over the median time, in 10^9 a second; /arith: that")
    print("over the arithmetic yardstick's in the same round (shaders/multiply_add.comp: as many FP32 multiply-then-")
    print("add pairs, rounded one by one, in registers; the fastest shape, chains x pairs unrolled), median over")
    print("rounds; spread: the lowest and highest round; arith Gpair/s: the yardstick's rate (x2: its GFLOP/s),")
    print("the device's arithmetic limit; NumPy (np.matmul, FP32), torch: their time over ours (above 1: dmlpy")
    print("faster).")
    for r in rows:
        if not r.relative_error <= (2e-2 if "float16" in r.case else 1e-4):
            print(f"{r.case}: the result differs from the FP64 product by {r.relative_error:.2g} of its largest "
                  "magnitude")


def gemm_rows(bench: Device, cases: list[GemmCase], rounds: int, progress: Progress) -> tuple[list, list[str]]:
    """The GEMM table's rows and the cases skipped (with why); every case skipped where this
    dmlpy has no GEMM."""
    if not hasattr(dml, "GemmOperatorDesc"):
        for case in cases:
            progress.step(case.name)
        return [], [f"{case.name}: this dmlpy has no GemmOperatorDesc" for case in cases]
    rows, skipped = [], []
    for case in cases:
        progress.step(case.name)
        try:
            rows.append(run_gemm_case(bench, case, rounds))
        except dml.UnsupportedError as error:
            skipped.append(f"{case.name}: {error.message}")
    return rows, skipped


def same_bits_cell(row: dict) -> str:
    return "yes" if row["same_bits"] else "NO"


def print_chains(rows: list[dict]) -> None:
    print_table([("graph: a chain fused into one kernel (host ms)", 48, lambda row: row["chain"]),
                 ("elements", 10, lambda row: f"{row['elements']}"),
                 ("fused", 9, lambda row: f"{row['fused_ms']:.3f}"),
                 ("one by one", 11, lambda row: f"{row['unfused_ms']:.3f}"),
                 ("speedup", 8, lambda row: f"{row['speedup']:.2f}x"),
                 ("dev arrays", 11, lambda row: f"{row['device_arrays_ms']:.3f}"),
                 ("np arrays", 10, lambda row: f"{row['numpy_arrays_ms']:.3f}"),
                 ("speedup", 8, lambda row: f"{row['device_arrays_speedup']:.2f}x"),
                 ("same bits", 10, same_bits_cell)], rows,
                ["fused: the chain compiled as one graph; one by one: its operators' binding tables executed in turn;",
                 "dev arrays / np arrays: the chain through the front ends on dmlpy.asarray arrays / on NumPy arrays."])


def print_expressions(rows: list[dict]) -> None:
    print_table([("expression on four arrays (host ms)", 54, lambda row: row["expression"]),
                 ("elements", 10, lambda row: f"{row['elements']}"),
                 ("dev arrays", 11, lambda row: f"{row['device_arrays_ms']:.3f}"),
                 ("np arrays", 10, lambda row: f"{row['numpy_arrays_ms']:.3f}"),
                 ("speedup", 8, lambda row: f"{row['device_arrays_speedup']:.2f}x"),
                 ("NumPy", 9, lambda row: f"{row['numpy_ms']:.3f}"),
                 ("same bits", 10, same_bits_cell)], rows,
                ["dev arrays: the front ends' calls on dmlpy.asarray arrays, deferred, fused and read back; np arrays:",
                 "the same calls on NumPy arrays, one by one; NumPy: the expression in NumPy itself."])


def print_tables(header: str, rows: list[Row], overhead: list[dict]) -> None:
    print(header)
    print(f"{'case':36} {'elements':>9} {'median ms':>10} {'GB/s':>7} {'/copy':>6} {'spread':>12} "
          f"{'copy GB/s':>9} {'shape':>7} {'/vkcopy':>7} {'NumPy':>7} {'torch':>7} {'/streams':>8} "
          f"{'read/write GB/s':>15}")
    for r in rows:
        streams = "-" if r.streams_ratio is None else f"{r.streams_ratio:.2f}"
        one_way = "-" if r.read_gbps is None else f"{r.read_gbps:.2f}/{r.write_gbps:.2f}"
        print(f"{r.case:36} {r.elements:>9} {r.median_ms:>10.3f} {r.gbps:>7.2f} {r.copy_ratio:>6.2f} "
              f"{f'{r.copy_ratio_low:.2f}-{r.copy_ratio_high:.2f}':>12} {r.copy_gbps:>9.2f} {r.copy_shape:>7} "
              f"{r.copy_buffer_ratio:>7.2f} {ratio_cell(r.numpy_ratio)} {ratio_cell(r.torch_ratio)} {streams:>8} "
              f"{one_way:>15}")
    print("\n/copy: our bandwidth over the fastest copy shader's moving the same bytes, median over rounds;")
    print("spread: the lowest and highest round; shape: that copy shader (workgroup x vectors per invocation,")
    print("i: interleaved, w: in 64-bit components); /vkcopy: over vkCmdCopyBuffer; NumPy, torch: their time")
    print("over ours (above 1: dmlpy faster); /streams: the time the fastest read-only and write-only shaders")
    print("take for the bytes we read and the bytes we write, over ours (1: as fast as this device reads and")
    print("writes them apart; a kernel that reads more than it writes can reach 1 where /copy stays below);")
    print("read/write GB/s: those shaders' bandwidths.\n")
    print(f"{'host cost of one 256-element dispatch':52} {'us':>8} {'vs bare kp':>11} {'spread':>12}")
    for row in overhead:
        if row["path"].startswith("command list batch_count"):
            print(f"the chain's command list: {row['ratio_to_bare']:.0f} submission per replay, "
                  f"{row['ratio_low']:.0f} barriers")
            continue
        print(f"{row['path']:52} {row['microseconds_per_dispatch']:>8.1f} {row['ratio_to_bare']:>10.2f}x "
              f"{row['ratio_low']:>5.2f}-{row['ratio_high']:.2f}")


def plot(rows: list[Row], path: Path, title: str) -> None:
    """Bandwidth against size (with the copy limit) and the ratio to the copy limit, its
    spread over rounds as error bars."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (bandwidth, ratio) = plt.subplots(1, 2, figsize=(15, 6.5))
    styles = ["-", "--", "-.", ":"]
    for index, name in enumerate(dict.fromkeys(r.case for r in rows)):
        points = [r for r in rows if r.case == name]
        sizes = [r.elements for r in points]
        style = {"marker": "o", "markersize": 3, "linestyle": styles[index // 10 % len(styles)], "label": name}
        bandwidth.plot(sizes, [r.gbps for r in points], **style)
        ratio.errorbar(sizes, [r.copy_ratio for r in points],
                       yerr=[[r.copy_ratio - r.copy_ratio_low for r in points],
                             [r.copy_ratio_high - r.copy_ratio for r in points]], capsize=2, **style)
    limit = {}
    for r in rows:  # the fastest copy shader at each size, over every case's rounds
        limit[r.elements] = max(limit.get(r.elements, 0.0), r.copy_gbps)
    bandwidth.plot(sorted(limit), [limit[k] for k in sorted(limit)], "k", linewidth=3, alpha=0.5,
                   label="fastest copy shader (limit)")
    ratio.axhline(1.0, color="k", linewidth=2, alpha=0.5)
    for axes, label in ((bandwidth, "effective bandwidth, GB/s"), (ratio, "bandwidth / copy limit (same bytes)")):
        axes.set_xscale("log")
        axes.set_xlabel("elements per tensor")
        axes.set_ylabel(label)
        axes.grid(True, which="both", alpha=0.3)
    bandwidth.set_yscale("log")
    ratio.legend(fontsize=6, ncol=2)
    figure.suptitle(title, fontsize=9)
    figure.tight_layout()
    figure.savefig(path, dpi=100)


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return value


def case_list(text: str) -> list[Case]:
    """--cases: comma-separated names from --list-cases."""
    names = [name.strip() for name in text.split(",")]
    unknown = [name for name in names if name not in CASES]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown case {unknown[0]!r}: --list-cases prints them")
    return [CASES[name] for name in names]


def element_counts(text: str) -> list[int]:
    """--sizes: comma-separated positive element counts."""
    return [positive_int(part) for part in text.split(",")]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a small subset at 256 and 65536 elements, 3 rounds")
    parser.add_argument("--sizes", type=element_counts,
                        help="comma-separated element counts (default 256 to 64M by 16x)")
    parser.add_argument("--cases", type=case_list,
                        help="comma-separated case names, as the table prints them (default: all; --list-cases)")
    parser.add_argument("--targets", action="store_true", help="only the cases dmlpy's speed targets name")
    parser.add_argument("--list-cases", action="store_true", help="print every case's name and exit")
    parser.add_argument("--rounds", "--repeats", dest="rounds", type=positive_int,
                        help="interleaved rounds per measurement (default 7; 3 with --quick)")
    parser.add_argument("--no-chains", action="store_true", help="leave out the graph table")
    parser.add_argument("--graphs-only", action="store_true",
                        help="only the graph table: fused chains against their operators one by one")
    parser.add_argument("--graph-compile", type=element_counts, nargs="?", const=[1000, 4000], metavar="NODES",
                        help="only the host time of building and compiling chains of this many element-wise "
                             "nodes (comma-separated; default 1000,4000)")
    parser.add_argument("--gemm-only", action="store_true",
                        help="only the GEMM table: multiply-add pairs per second against the arithmetic yardstick "
                             "(with --quick only the small training shapes)")
    parser.add_argument("--no-gemm", action="store_true", help="leave out the GEMM table")
    parser.add_argument("--json", type=Path, help="also write every figure to this JSON file")
    parser.add_argument("--plot", type=Path, help="draw bandwidth against size to this PNG (needs matplotlib)")
    parser.add_argument("--replot", type=Path, metavar="JSON",
                        help="only redraw --plot from a JSON file an earlier run wrote")
    args = parser.parse_args(argv)
    if args.list_cases:
        print("\n".join(CASES))
        return 0
    if args.plot or args.replot:
        if args.replot and not args.plot:
            parser.error("--replot JSON needs --plot FILE.png, the picture to draw")
        try:
            import matplotlib  # noqa: F401  (checked before a run that would end without its plot)
        except ImportError:
            parser.error("--plot needs matplotlib: pip install matplotlib (or pip install 'dmlpy[plot]')")
    if args.replot:
        try:
            saved = json.loads(read_regular_file(str(args.replot), "--replot", 64 << 20, "bench.py's JSON"))
            rows = [Row(**row) for row in saved["rows"]]
            header = saved["header"]
        except dml.InvalidArgumentError as error:
            parser.error(error.message)
        except (ValueError, KeyError, TypeError) as error:
            parser.error(f"--replot {args.replot}: not a JSON file written by bench.py --json ({error})")
        plot(rows, args.plot, header.lstrip("# "))
        print(args.plot)
        return 0
    cases = args.cases or (QUICK_CASES if args.quick else TARGET_CASES if args.targets else FULL_CASES)
    sizes = args.sizes or (
        [256, 65536] if args.quick else [256, 4096, 65536, 1 << 20, 1 << 24, 1 << 26])
    rounds = args.rounds or (3 if args.quick else 7)
    bench = Device(dml.create_device())
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=ROOT).stdout.strip()
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    timer = "GPU timestamps" if bench.gpu_timer else "host time"
    header = (f"# {bench.device.adapter_name}, {when}, commit {commit or '?'}, {timer}, "
              f"{rounds} interleaved rounds")

    def report_only(name: str, rows, print_rows) -> int:
        """A run of one table alone: printed, written as JSON with --json."""
        print(header)
        print_rows(rows)
        if args.json:
            args.json.write_text(json.dumps({"header": header, name: rows}, indent=1))
        bench.device.close()
        return 0

    if args.graph_compile:
        progress = Progress("bench", 1)
        progress.step(f"graphs of {', '.join(map(str, args.graph_compile))} nodes, {rounds} rounds")
        rows = graph_compile_rows(bench.device, args.graph_compile, rounds)
        progress.done()
        return report_only("graph_compile", rows, print_graph_compile)
    if args.gemm_only and (args.graphs_only or args.no_gemm):
        parser.error("--gemm-only takes neither --graphs-only nor --no-gemm")
    # The GEMM table: in a run of every operator (default or --quick) or alone with --gemm-only.
    gemm_cases = [] if args.no_gemm or args.graphs_only or ((args.cases or args.targets) and not args.gemm_only) \
        else QUICK_GEMM_CASES if args.quick else GEMM_CASES
    if args.gemm_only:
        progress = Progress("bench", len(gemm_cases))
        gemm, skipped = gemm_rows(bench, gemm_cases, rounds, progress)
        progress.done()
        print(header)
        print_gemm(gemm)
        for note in skipped:
            print(f"skipped {note}")
        if args.json:
            args.json.write_text(json.dumps({"header": header, "gemm": [asdict(r) for r in gemm],
                                             "skipped": skipped}, indent=1))
        bench.device.close()
        return 0
    chain_steps = 0 if args.no_chains else (len(CHAINS) + len(EXPRESSIONS)) * len(sizes)
    progress = Progress("bench", chain_steps if args.graphs_only else
                        chain_steps + len(cases) * len(sizes) + 1 + len(gemm_cases))
    chains = [] if args.no_chains else chain_rows(bench.device, sizes, rounds, progress)
    expressions = [] if args.no_chains else expression_rows(bench.device, sizes, rounds, progress)
    if args.graphs_only:
        progress.done()
        print(header)
        print_chains(chains)
        print_expressions(expressions)
        if args.json:
            args.json.write_text(json.dumps({"header": header, "chains": chains, "expressions": expressions},
                                            indent=1))
        bench.device.close()
        return 0
    rows, skipped = [], []
    for case in cases:
        for size in sizes:
            progress.step(f"{case.name} at {size} elements")
            try:
                rows.append(run_case(bench, case, size, rounds))
            except dml.UnsupportedError as error:  # beyond what this device can bind or hold
                skipped.append(f"{case.name} at {size} elements: {error.message}")
    progress.step("host cost of one dispatch")
    overhead = overhead_rows(bench, rounds)
    gemm, gemm_skipped = gemm_rows(bench, gemm_cases, rounds, progress)
    skipped += gemm_skipped
    progress.done()
    print_tables(header, rows, overhead)
    if chains:
        print()
        print_chains(chains)
        print_expressions(expressions)
    if gemm:
        print()
        print_gemm(gemm)
    for note in skipped:
        print(f"skipped {note}")
    if args.json:
        args.json.write_text(json.dumps({"header": header, "rows": [asdict(r) for r in rows],
                                         "host_overhead": overhead, "chains": chains, "expressions": expressions,
                                         "gemm": [asdict(r) for r in gemm], "skipped": skipped}, indent=1))
    if args.plot:
        plot(rows, args.plot, header.lstrip("# "))
    bench.device.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
