#!/usr/bin/env python3
"""Effective bandwidth of every operator against the same device's own copy limits.

For each operator, data type and layout, at sizes from 256 elements up: the median and
minimum time of a pre-recorded dispatch (GPU timestamps where the device has them, else
host time), the bytes the operation must move over that time, and the ratio to two
limits measured in the same run on the same device: a plain copy shader moving the same
bytes (16 bytes per invocation) and vkCmdCopyBuffer. NumPy's expression of the same
operation, and PyTorch's where it imports, run beside it: ratios are the headline (their
time over ours), since absolute times on a shared machine are noise. A second table gives
the host's cost of one small dispatch through each path, beside a bare kp evaluation.

    python tools/bench.py --quick
    python tools/bench.py --sizes 256,65536,16777216 --json bench.json --plot bench.png
    python tools/bench.py --replot bench.json --plot bench.png   # redraw only, no run

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

from reference import REFERENCES, REFERENCES_F64, REFERENCES_ROWWISE  # noqa: E402
from reference import prelu_grad as reference_prelu_grad  # noqa: E402

import dmlpy as dml  # noqa: E402
from dmlpy.activations import TABLE  # noqa: E402
from dmlpy.codegen import plan_copy  # noqa: E402
from dmlpy.kompute import Launch  # noqa: E402
from dmlpy.shader_compiler import compile_glsl  # noqa: E402

T = dml.TensorDataType
NUMPY = {T.FLOAT32: np.float32, T.FLOAT16: np.float16, T.BFLOAT16: ml_dtypes.bfloat16, T.INT8: np.int8}
CHANNELS = 64
REQUIRED_SCALARS = {"alpha": 1.5, "beta": -0.25}  # for scalars DirectML gives no default


@dataclass(frozen=True)
class Case:
    operator: str  # a name in dml.OPERATORS
    data_type: T
    layout: str  # packed, transposed (the inputs), broadcast (the second input along rows), per-channel (PReLU)

    @property
    def name(self) -> str:
        return f"{self.operator} {self.data_type.name.lower()} {self.layout}"


# Every element-wise operator of the table, packed; the layouts and data types on the
# gradient that started dmlpy; PReLU's reduction.
ELEMENTWISE = [name for row in TABLE if row.axes_form is None
               for name in (row.name, f"{row.name}_grad" if row.gradient else None) if name]
# The row-wise operators (softmax family), over rows of ROW_LENGTH elements.
ROWWISE = [name for row in TABLE if row.axes_form is not None for name in (row.name, f"{row.name}_grad")]
ROW_LENGTH = 1024
FULL_CASES = [Case("relu_grad", t, "packed") for t in (T.FLOAT32, T.FLOAT16, T.BFLOAT16, T.INT8)] + [
    Case("relu_grad", T.FLOAT32, "transposed"), Case("relu_grad", T.FLOAT16, "transposed"),
    Case("relu_grad", T.FLOAT32, "broadcast"), Case("relu_grad", T.FLOAT16, "broadcast"),
    Case("prelu_grad", T.FLOAT32, "per-channel"), Case("prelu_grad", T.FLOAT16, "per-channel"),
    *[Case(name, T.FLOAT32, "packed") for name in ELEMENTWISE if name != "relu_grad"],
    *[Case(name, T.FLOAT32, "rows") for name in ROWWISE]]
QUICK_CASES = [*FULL_CASES[:2], FULL_CASES[4], FULL_CASES[6], FULL_CASES[8],
               Case("hard_swish_grad", T.FLOAT16, "packed")]


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
    median_ms: float
    min_ms: float
    gbps: float
    copy_shader_ratio: float
    copy_buffer_ratio: float
    numpy_ratio: float | None
    torch_ratio: float | None


def shape_of(case: Case, count: int) -> tuple[int, ...]:
    if case.layout == "per-channel":
        return (max(1, count // CHANNELS), CHANNELS)
    if case.layout == "packed":
        return (count,)
    if case.layout == "rows":
        return (max(1, count // ROW_LENGTH), ROW_LENGTH)
    side = max(1, int(round(count ** 0.5)))
    return (side, side)


def build(device, case: Case, count: int):
    """The desc for a case (its strides realise the layout) and the bytes it must move."""
    sizes = shape_of(case, count)
    element = dml.types.data_type_info(case.data_type).element_size
    desc = dml.BufferTensorDesc
    schema = dml.OPERATORS[case.operator]
    if case.layout == "per-channel":  # PReLU: the slope broadcast along rows, its gradient one row
        op = schema.desc_class(desc(case.data_type, sizes), desc(case.data_type, sizes, (0, 1)),
                               desc(case.data_type, sizes), desc(case.data_type, sizes),
                               desc(case.data_type, (1, sizes[1])))
    else:
        layouts = {"transposed": [(1, sizes[0])] * len(schema.inputs), "broadcast": [None, (0, 1)]}
        inputs = [desc(case.data_type, sizes, strides) for _, strides in
                  zip(schema.inputs, [*layouts.get(case.layout, []), *[None] * len(schema.inputs)])]
        op = schema.desc_class(*inputs, desc(case.data_type, sizes), **scalars_of(case.operator))
    elements = math.prod(sizes)
    moved = sum(min(getattr(op, f.name).total_tensor_size_in_bytes, elements * element) for f in schema.tensors)
    return op, elements, moved


def timed(run, repeats: int) -> list[float]:
    run()  # warm-up: pipeline creation and first-touch costs stay out of the figures
    return [run() for _ in range(repeats)]


def host_seconds(function):
    def run():
        start = time.perf_counter()
        function()
        return time.perf_counter() - start
    return run


class Device:
    """The benchmark's view of a dmlpy device: timed runs of tables and of copy limits."""

    def __init__(self, device):
        self.device = device
        self.context = device.context  # kp-level access: timestamps and the copy yardsticks
        self.gpu_timer = self.context.timestamps_usable

    def table_run(self, table):
        stages = [self.context.record(d.algorithms, timestamped=self.gpu_timer) for d in table.dispatches]
        if not self.gpu_timer:
            return host_seconds(lambda: [self.context.run(s) for s in stages])

        def run():
            total = 0.0
            for stage in stages:
                self.context.run(stage)
                total += self.context.gpu_seconds(stage)
            return total
        return run

    def copy_runs(self, byte_count: int):
        """(copy shader, vkCmdCopyBuffer) runs that read and write byte_count / 2 bytes each."""
        words = max(4, byte_count // 8 // 4 * 4)
        plan = plan_copy(words, self.device.adapter)
        (stage,) = plan.stages
        spirv = compile_glsl(stage.source()).spirv
        source, destination = (self.device.create_buffer(words * 4) for _ in range(2))
        algorithms = self.context.create_dispatch(spirv, [Launch(
            [source.segments[0], destination.segments[0]], stage.workgroups(self.device.adapter, words),
            np.array([words], np.uint32))]).algorithms
        shader = self.context.record(algorithms, timestamped=self.gpu_timer)
        buffer_copy = self.context.record_buffer_copy(source.segments[0], destination.segments[0], self.gpu_timer)

        def timed_run(dispatch):
            def run():
                start = time.perf_counter()
                self.context.run(dispatch)
                return self.context.gpu_seconds(dispatch) if self.gpu_timer else time.perf_counter() - start
            return run
        return timed_run(shader), timed_run(buffer_copy), (source, destination)


def arrays_for(case: Case, count: int) -> list[np.ndarray]:
    """The case's inputs as NumPy arrays in the same layout."""
    schema = dml.OPERATORS[case.operator]
    sizes = shape_of(case, count)
    dtype = NUMPY[case.data_type]
    rng = np.random.default_rng(0)
    arrays = [(rng.standard_normal(sizes) * 3).astype(dtype) for _ in schema.inputs]
    if case.layout == "transposed":
        arrays = [np.ascontiguousarray(a.T).T for a in arrays]
    elif case.layout == "broadcast":
        arrays[1] = np.broadcast_to(arrays[1][0], sizes)
    elif case.layout == "per-channel":
        arrays[1] = np.broadcast_to(arrays[1][0], sizes)
    return arrays


def numpy_run(case: Case, count: int):
    """NumPy's expression of the same operation on the same layout (the independent reference
    of the tests), writing a row-major result."""
    arrays = arrays_for(case, count)
    out = np.empty(shape_of(case, count), NUMPY[case.data_type])
    if case.operator in REFERENCES_ROWWISE:
        reference = REFERENCES_ROWWISE[case.operator]
        return host_seconds(lambda: np.copyto(out, reference(*arrays, axes=(1,))))
    reference = REFERENCES.get(case.operator) or REFERENCES_F64.get(case.operator)
    if reference is not None:
        scalars = scalars_of(case.operator)
        return host_seconds(lambda: np.copyto(out, reference(*arrays, **scalars)))
    x, slope, dy = arrays
    return host_seconds(lambda: (np.copyto(out, reference_prelu_grad(x, slope, dy, (0,))[0])))


# PyTorch's own kernels for the same operations, where it has one.
TORCH = {
    "relu_grad": lambda torch, x, dy: torch.ops.aten.threshold_backward(dy, x, 0),
    "hard_sigmoid_grad": lambda torch, x, dy: torch.ops.aten.hardsigmoid_backward(dy, x),
    "hard_swish_grad": lambda torch, x, dy: torch.ops.aten.hardswish_backward(dy, x),
    "leaky_relu_grad": lambda torch, x, dy: torch.ops.aten.leaky_relu_backward(dy, x, 0.01, False),
    "relu": lambda torch, x: torch.relu(x),
    "hard_swish": lambda torch, x: torch.nn.functional.hardswish(x),
    "prelu_grad": lambda torch, x, slope, dy: torch.ops.aten._prelu_kernel_backward(dy, x, slope[0]),
    "softmax": lambda torch, x: torch.softmax(x, -1),
    "log_softmax": lambda torch, x: torch.log_softmax(x, -1),
    "softmax_grad": lambda torch, y, dy: torch.ops.aten._softmax_backward_data(dy, y, -1, y.dtype),
    "log_softmax_grad": lambda torch, y, dy: torch.ops.aten._log_softmax_backward_data(dy, y, -1, y.dtype),
}


def torch_run(case: Case, count: int):
    try:
        import torch
    except ImportError:
        return None
    dtype = {T.FLOAT32: torch.float32, T.FLOAT16: torch.float16, T.BFLOAT16: torch.bfloat16}.get(case.data_type)
    if case.operator not in TORCH or dtype is None or case.layout not in ("packed", "per-channel", "rows"):
        return None
    target = "cuda" if torch.cuda.is_available() else "cpu"
    tensors = [torch.from_numpy(np.ascontiguousarray(a).astype(np.float32)).to(target).to(dtype)
               for a in arrays_for(case, count)]
    sync = torch.cuda.synchronize if target == "cuda" else (lambda: None)
    call = TORCH[case.operator]
    return host_seconds(lambda: (call(torch, *tensors), sync()))


def overhead_rows(bench: Device, repeats: int) -> list[dict]:
    """Host cost of one 256-element dispatch through each path, beside a bare kp evaluation."""
    device = bench.device
    tensor = dml.BufferTensorDesc(T.FLOAT32, (256,))
    desc = dml.ActivationReluGradOperatorDesc(tensor, tensor, tensor)
    compiled = device.compile_operator(device.create_operator(desc))
    x = np.linspace(-1, 1, 256, dtype=np.float32)
    buffers = [device.create_buffer(1024) for _ in range(3)]
    table = device.create_binding_table(compiled, inputs=buffers[:2], outputs=buffers[2:])
    dispatches_per_list = 100
    command_list = device.create_command_list()
    for _ in range(dispatches_per_list):
        command_list.record_dispatch(device.create_binding_table(compiled, inputs=buffers[:2],
                                                                 outputs=[device.create_buffer(1024)]))
    bare = bench.context.record(table.dispatches[0].algorithms)
    paths = {
        "bare kp sequence eval": (lambda: bench.context.run(bare), 1),
        "NumPy front end (relu_grad)": (lambda: dml.relu_grad(x, x, device=device), 1),
        "execute(binding table)": (lambda: device.execute(table), 1),
        f"command list replay ({dispatches_per_list} dispatches)": (lambda: device.execute(command_list),
                                                                    dispatches_per_list),
    }
    rows = []
    for name, (call, per_call) in paths.items():
        samples = timed(host_seconds(call), max(repeats, 20))
        rows.append({"path": name, "microseconds_per_dispatch": statistics.median(samples) / per_call * 1e6})
    base = rows[0]["microseconds_per_dispatch"]
    for row in rows:
        row["ratio_to_bare"] = row["microseconds_per_dispatch"] / base
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


def chain_rows(device, sizes: list[int], repeats: int) -> list[dict]:
    """Each chain compiled as a graph (one fused kernel) against its operators' binding tables
    executed one after another, timed interleaved through device.execute (host time); and the
    chain through the front ends on device arrays against the same on NumPy arrays."""
    rows = []
    for name, steps in CHAINS.items():
        for count in sizes:
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


def run_case(bench: Device, case: Case, count: int, repeats: int) -> Row:
    device = bench.device
    op, elements, moved = build(device, case, count)
    compiled = device.compile_operator(device.create_operator(op))
    buffers = [device.create_buffer(getattr(op, f.name).total_tensor_size_in_bytes) for f in op.schema.tensors]
    inputs = len(op.schema.inputs)
    temporary_size = compiled.binding_properties.temporary_resource_size
    table = device.create_binding_table(compiled, inputs=buffers[:inputs], outputs=buffers[inputs:],
                                        temporary=device.create_buffer(temporary_size) if temporary_size else None)
    samples = timed(bench.table_run(table), repeats)
    copy_shader, buffer_copy, copy_buffers = bench.copy_runs(moved)
    copy_time = statistics.median(timed(copy_shader, repeats))
    buffer_copy_time = statistics.median(timed(buffer_copy, repeats))
    numpy_time = statistics.median(timed(numpy_run(case, count), repeats))
    torch_call = torch_run(case, count)
    torch_time = statistics.median(timed(torch_call, repeats)) if torch_call else None
    for buffer in (*buffers, *copy_buffers):
        buffer.destroy()
    median = statistics.median(samples)
    return Row(case.name, elements, moved, median * 1e3, min(samples) * 1e3, moved / median / 1e9,
               copy_time / median, buffer_copy_time / median, numpy_time / median,
               torch_time / median if torch_time else None)


def print_chains(rows: list[dict]) -> None:
    print(f"{'graph: a chain fused into one kernel (host ms)':48} {'elements':>10} {'fused':>9} {'one by one':>11} "
          f"{'speedup':>8} {'dev arrays':>11} {'np arrays':>10} {'speedup':>8} {'same bits':>10}")
    for row in rows:
        print(f"{row['chain']:48} {row['elements']:>10} {row['fused_ms']:>9.3f} {row['unfused_ms']:>11.3f} "
              f"{row['speedup']:>7.2f}x {row['device_arrays_ms']:>11.3f} {row['numpy_arrays_ms']:>10.3f} "
              f"{row['device_arrays_speedup']:>7.2f}x {'yes' if row['same_bits'] else 'NO':>10}")
    print("fused: the chain compiled as one graph; one by one: its operators' binding tables executed in turn;")
    print("dev arrays / np arrays: the chain through the front ends on dmlpy.asarray arrays / on NumPy arrays.\n")


def print_tables(header: str, rows: list[Row], overhead: list[dict]) -> None:
    print(header)
    print(f"{'case':34} {'elements':>10} {'median ms':>10} {'min ms':>9} {'GB/s':>7} {'/copy':>6} "
          f"{'/vkcopy':>8} {'NumPy':>7} {'torch':>7}")
    for r in rows:
        def ratio(value):
            return f"{value:6.2f}x" if value is not None else f"{'-':>7}"
        print(f"{r.case:34} {r.elements:>10} {r.median_ms:>10.3f} {r.min_ms:>9.3f} {r.gbps:>7.2f} "
              f"{r.copy_shader_ratio:>6.2f} {r.copy_buffer_ratio:>8.2f} {ratio(r.numpy_ratio)} {ratio(r.torch_ratio)}")
    print("\n/copy: our bandwidth over a copy shader moving the same bytes; /vkcopy: over vkCmdCopyBuffer;")
    print("NumPy, torch: their time over ours (above 1: dmlpy is faster).\n")
    print(f"{'host cost of one 256-element dispatch':48} {'us':>8} {'vs bare kp':>11}")
    for row in overhead:
        print(f"{row['path']:48} {row['microseconds_per_dispatch']:>8.1f} {row['ratio_to_bare']:>10.2f}x")


def plot(rows: list[Row], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(10, 6))
    styles = ["-", "--", "-.", ":"]
    for index, name in enumerate(dict.fromkeys(r.case for r in rows)):
        points = [r for r in rows if r.case == name]
        axes.plot([r.elements for r in points], [r.gbps for r in points], marker="o", markersize=3,
                  linestyle=styles[index // 10 % len(styles)], label=name)
    # The limit for the FLOAT32 packed case: a copy shader moving the same bytes.
    reference = [r for r in rows if r.case == FULL_CASES[0].name]
    axes.plot([r.elements for r in reference], [r.gbps * r.copy_shader_ratio for r in reference], "k",
              linewidth=3, alpha=0.5, label="copy shader moving float32 relu_grad's bytes (limit)")
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("elements per tensor")
    axes.set_ylabel("effective bandwidth, GB/s")
    axes.set_title(title)
    axes.legend(fontsize=7)
    axes.grid(True, which="both", alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return value


def element_counts(text: str) -> list[int]:
    """--sizes: comma-separated positive element counts."""
    return [positive_int(part) for part in text.split(",")]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a small subset at 256 and 65536 elements, 3 repeats")
    parser.add_argument("--sizes", type=element_counts,
                        help="comma-separated element counts (default 256 to 64M by 16x)")
    parser.add_argument("--repeats", type=positive_int, help="timed runs per measurement (default 5; 3 with --quick)")
    parser.add_argument("--graphs-only", action="store_true",
                        help="only the graph table: fused chains against their operators one by one")
    parser.add_argument("--json", type=Path, help="also write every figure to this JSON file")
    parser.add_argument("--plot", type=Path, help="draw bandwidth against size to this PNG (needs matplotlib)")
    parser.add_argument("--replot", type=Path, metavar="JSON",
                        help="only redraw --plot from a JSON file an earlier run wrote")
    args = parser.parse_args(argv)
    if args.plot or args.replot:
        if args.replot and not args.plot:
            parser.error("--replot JSON needs --plot FILE.png, the picture to draw")
        try:
            import matplotlib  # noqa: F401  (checked before a run that would end without its plot)
        except ImportError:
            parser.error("--plot needs matplotlib: pip install matplotlib (or pip install 'dmlpy[plot]')")
    if args.replot:
        try:
            saved = json.loads(args.replot.read_text())
            rows = [Row(**row) for row in saved["rows"]]
            header = saved["header"]
        except (OSError, ValueError, KeyError, TypeError) as error:
            parser.error(f"--replot {args.replot}: not a JSON file written by bench.py --json ({error})")
        plot(rows, args.plot, header.lstrip("# "))
        print(args.plot)
        return 0
    cases = QUICK_CASES if args.quick else FULL_CASES
    sizes = args.sizes or (
        [256, 65536] if args.quick else [256, 4096, 65536, 1 << 20, 1 << 24, 1 << 26])
    repeats = args.repeats or (3 if args.quick else 5)
    bench = Device(dml.create_device())
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=ROOT).stdout.strip()
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    timer = "GPU timestamps" if bench.gpu_timer else "host time"
    header = f"# {bench.device.adapter_name}, {when}, commit {commit or '?'}, {timer}, median of {repeats}"
    chains = chain_rows(bench.device, sizes, repeats)
    if args.graphs_only:
        print(header)
        print_chains(chains)
        if args.json:
            args.json.write_text(json.dumps({"header": header, "chains": chains}, indent=1))
        bench.device.close()
        return 0
    rows, skipped = [], []
    for case in cases:
        for size in sizes:
            try:
                rows.append(run_case(bench, case, size, repeats))
            except dml.UnsupportedError as error:  # beyond what this device can bind or hold
                skipped.append(f"{case.name} at {size} elements: {error.message}")
    overhead = overhead_rows(bench, repeats)
    print_tables(header, rows, overhead)
    print()
    print_chains(chains)
    for note in skipped:
        print(f"skipped {note}")
    if args.json:
        args.json.write_text(json.dumps({"header": header, "rows": [asdict(r) for r in rows],
                                         "host_overhead": overhead, "chains": chains, "skipped": skipped},
                                        indent=1))
    if args.plot:
        plot(rows, args.plot, header.lstrip("# "))
    bench.device.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
