#!/usr/bin/env python3
"""Effective bandwidth of each operator against the same device's copy shader.

For every operator, data type and layout: median and minimum time of a pre-recorded
dispatch, the bytes the operation must move over that time, and the ratio to a copy
shader moving the same bytes on the same device in the same run. NumPy's (and, where
importable, PyTorch's) best expression of the same operation run beside it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import dmlpy as dml
from dmlpy.codegen import plan_copy
from dmlpy.kompute import Launch
from dmlpy.shader_compiler import compile_glsl, shader_source

T = dml.TensorDataType


@dataclass
class Row:
    case: str
    elements: int
    bytes_moved: int
    median_ms: float
    min_ms: float
    gbps: float
    copy_ratio: float | None = None
    numpy_ratio: float | None = None
    torch_ratio: float | None = None


def timed(run, repeats: int) -> tuple[float, float]:
    run()  # warm-up: first-dispatch costs stay out of the figures
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples), min(samples)


def relu_grad_case(device, data_type, count, layout):
    """A binding table for relu_grad on `count` elements in a named layout."""
    side = int(round(count ** 0.5))
    sizes, x_strides, dy_strides = (count,), None, None
    if layout == "transposed":
        sizes, x_strides = (side, side), (1, side)
        dy_strides = x_strides
    elif layout == "broadcast":
        sizes, dy_strides = (side, side), (0, 1)
    packed = dml.BufferTensorDesc(data_type, sizes)
    desc = dml.ActivationReluGradOperatorDesc(dml.BufferTensorDesc(data_type, sizes, x_strides),
                                              dml.BufferTensorDesc(data_type, sizes, dy_strides), packed)
    compiled = device.compile_operator(device.create_operator(desc))
    buffers = [device.create_buffer(t.total_tensor_size_in_bytes)
               for t in (desc.input_tensor, desc.input_gradient_tensor, desc.output_gradient_tensor)]
    table = device.create_binding_table(compiled, inputs=buffers[:2], outputs=buffers[2:])
    element_size = packed.element_size
    elements = packed.element_count
    dy_bytes = desc.input_gradient_tensor.total_tensor_size_in_bytes
    return table, elements, 2 * elements * element_size + dy_bytes, buffers


def copy_table(device, byte_count):
    """Run the copy shader over byte_count / 2 bytes (it reads and writes them: byte_count moved)."""
    words = max(4, byte_count // 8 // 4 * 4)
    plan = plan_copy(words, device.adapter)
    (stage,) = plan.stages
    spirv = compile_glsl(shader_source(stage.shader, stage.defines)).spirv
    source, destination = device.create_buffer(words * 4), device.create_buffer(words * 4)
    launch = Launch([source._segments[0], destination._segments[0]], stage.workgroups(device.adapter, words),
                    np.array([words], np.uint32))
    dispatch = device._context.create_dispatch(spirv, [launch])
    return (lambda: device._context.run(dispatch)), (source, destination)


def numpy_relu_grad(count, dtype, layout):
    """NumPy's expression of the same operation on the same layout."""
    x = np.random.default_rng(0).standard_normal(count).astype(dtype)
    dy = np.ones_like(x)
    side = int(round(count ** 0.5))
    if layout == "transposed":
        x, dy = x.reshape(side, side).T, dy.reshape(side, side).T
    elif layout == "broadcast":
        x, dy = x.reshape(side, side), np.broadcast_to(dy[:side], (side, side))
    zero = dtype.type(0)
    if layout == "packed":
        return lambda: np.where(x > 0, dy, zero)
    # Like dmlpy's output, the result must be row-major: np.where alone would follow the
    # inputs' memory order and never transpose anything.
    out = np.empty((side, side), dtype)
    return lambda: np.copyto(out, np.where(x > 0, dy, zero))


def torch_relu_grad(count, dtype):
    try:
        import torch
    except ImportError:
        return None
    x = torch.randn(count).to(getattr(torch, np.dtype(dtype).name))
    dy = torch.ones_like(x)
    return lambda: torch.ops.aten.threshold_backward(dy, x, 0)


CASES = [("relu_grad float32 packed", T.FLOAT32, "packed"), ("relu_grad float16 packed", T.FLOAT16, "packed"),
         ("relu_grad float32 transposed", T.FLOAT32, "transposed"),
         ("relu_grad float32 broadcast dY", T.FLOAT32, "broadcast"),
         ("relu_grad float16 transposed", T.FLOAT16, "transposed"),
         ("relu_grad float16 broadcast dY", T.FLOAT16, "broadcast")]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--elements", type=int, default=1 << 24, help="elements per tensor (default 16M)")
    parser.add_argument("--repeats", type=int, default=10, help="timed runs per case (default 10)")
    parser.add_argument("--quick", action="store_true", help="small and fast: 1M elements, 3 repeats")
    parser.add_argument("--json", type=Path, help="also write the rows to this JSON file")
    args = parser.parse_args(argv)
    if args.quick:
        args.elements, args.repeats = 1 << 20, 3
    device = dml.create_device()
    print(f"# {device.adapter_name}, {args.elements} elements, {args.repeats} repeats")
    rows = []
    for name, data_type, layout in CASES:
        table, elements, moved, _buffers = relu_grad_case(device, data_type, args.elements, layout)
        median, minimum = timed(lambda table=table: device.execute(table), args.repeats)
        copy_run, _copy_buffers = copy_table(device, moved)
        copy_median, _ = timed(copy_run, args.repeats)
        dtype = dml.types.data_type_info(data_type).numpy_dtype
        numpy_median, _ = timed(numpy_relu_grad(elements, dtype, layout), args.repeats)
        torch_run = torch_relu_grad(elements, dtype) if layout == "packed" else None
        torch_median = timed(torch_run, args.repeats)[0] if torch_run else None
        rows.append(Row(name, elements, moved, median * 1e3, minimum * 1e3, moved / median / 1e9,
                        copy_median / median, numpy_median / median,
                        torch_median / median if torch_median else None))
    print(f"{'case':34} {'elements':>10} {'median ms':>10} {'min ms':>8} {'GB/s':>7} {'/copy':>6} "
          f"{'vs NumPy':>9} {'vs torch':>9}")
    for r in rows:
        torch_text = f"{r.torch_ratio:8.2f}x" if r.torch_ratio else f"{'-':>9}"
        print(f"{r.case:34} {r.elements:>10} {r.median_ms:>10.3f} {r.min_ms:>8.3f} {r.gbps:>7.2f} "
              f"{r.copy_ratio:>6.2f} {r.numpy_ratio:>8.2f}x {torch_text}")
    if args.json:
        args.json.write_text(json.dumps({"device": device.adapter_name, "rows": [asdict(r) for r in rows]}, indent=2))
    device.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
