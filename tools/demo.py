#!/usr/bin/env python3
"""make demo: one DirectML ACTIVATION_RELU_GRAD, validated, compiled to GLSL, run on Vulkan.

    python tools/demo.py               # on the adapter create_device() picks
    python tools/demo.py --adapter 1   # on adapter 1 of dmlpy.list_adapters()

Exit status: 0 bit-exact, 1 not (or no usable device), 2 a usage error.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import dmlpy as dml


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--adapter", help="adapter index (default: DMLPY_ADAPTER, else the first GPU, else the CPU)")
    args = parser.parse_args(argv)
    try:
        device = dml.create_device(adapter=args.adapter)
    except dml.InvalidArgumentError as error:  # an adapter index the machine does not have
        parser.error(error.message)
    except dml.DmlError as error:
        print(f"demo: {error}", file=sys.stderr)
        return 1
    print(f"device: adapter {device.adapter.index}, {device.adapter_name} "
          f"({device.adapter.adapter_type.name}, Vulkan {device.adapter.api_version}), {device.feature_level}")

    sizes = (2, 3, 5, 7)
    tensor = dml.BufferTensorDesc(dml.TensorDataType.FLOAT32, sizes)
    desc = dml.ActivationReluGradOperatorDesc(input_tensor=tensor, input_gradient_tensor=tensor,
                                              output_gradient_tensor=tensor)
    compiled = device.compile_operator(device.create_operator(desc))
    print(f"compiled: {desc.schema.dml_name}, sizes {sizes}, path '{compiled.plan.path}', "
          f"{sum(map(len, compiled.spirv))} bytes of SPIR-V ({'cache hit' if compiled.cache_hit else 'glslang'})")

    rng = np.random.default_rng(7)
    x = rng.standard_normal(sizes).astype(np.float32)
    dy = rng.standard_normal(sizes).astype(np.float32)
    x.flat[:4] = [0.0, -0.0, np.nan, 1e-45]  # the edges: zeros, NaN, a subnormal above zero
    dy.flat[:4] = [np.inf, np.nan, 1.0, -0.0]
    inputs = [device.create_buffer(tensor.total_tensor_size_in_bytes) for _ in range(2)]
    output = device.create_buffer(tensor.total_tensor_size_in_bytes)
    inputs[0].write(x)
    inputs[1].write(dy)
    table = device.create_binding_table(compiled, inputs=inputs, outputs=[output])
    start = time.perf_counter()
    device.execute(table)
    elapsed = time.perf_counter() - start
    dx = output.read(np.float32, x.size).reshape(sizes)

    expected = np.where(x > 0, dy, np.float32(0))
    exact = np.array_equal(dx.view(np.uint32), expected.view(np.uint32))
    print(f"executed in {elapsed * 1e3:.2f} ms; first elements  x  = {x.flat[:4]}")
    print(f"                                   dy = {dy.flat[:4]}")
    print(f"                                   dx = {dx.flat[:4]}")
    print(f"bit-exact against NumPy np.where(x > 0, dy, 0): {exact}")

    try:
        bad = dml.BufferTensorDesc(dml.TensorDataType.FLOAT32, (3, 2))
        dml.ActivationReluGradOperatorDesc(tensor, tensor, bad)
    except dml.InvalidArgumentError as error:
        print(f"a mismatched desc is rejected: {error}")
    device.close()
    return 0 if exact else 1


if __name__ == "__main__":
    sys.exit(main())
