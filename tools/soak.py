#!/usr/bin/env python3
"""A load run: mixed operators, sizes and layouts for a while; reports dispatches per
second, errors, and host memory at the start and the end. Besides front-end calls on NumPy
arrays, the load has chains on device arrays (deferred, fused, written while results that
read them are pending, and dropped), command lists replayed over their binding tables, and
graphs compiled and run.

    python tools/soak.py [--seconds 600] [--threads 4]

Every dispatch's result is compared with the NumPy reference (a wrong result counts as an
error). Resident memory is printed every tenth of the run, so a slow climb shows (and how far
the run has got); a line on standard error says what runs before the first. The run
fails (exit 1) on any error, or, in a run of at least 600 s, when resident memory at the end
is more than --max-growth-percent above what it was after the warm-up, the first half of
the run. The device's caches are bounded, but on a CPU device their memory settles only
after several minutes of this load (about 400 s on lavapipe, docs/benchmarks.md), so a
shorter run judges results alone and says so.

Exit status: 0 no error and flat memory, 1 an error or growth, 2 a usage error.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

import ml_dtypes
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from reference import (  # noqa: E402
    REFERENCES,
    REFERENCES_F64,
    REFERENCES_ROWWISE,
    assert_matches_reference,
    assert_rowwise_matches,
    relu_grad,
)

import dmlpy as dml  # noqa: E402
from dmlpy.frontends.numpy_api import FRONT_ENDS  # noqa: E402

DTYPES = [np.float32, np.float16, ml_dtypes.bfloat16]
MEMORY_VERDICT_SECONDS = 600  # the shortest run whose memory growth is judged
SHAPES = [(7,), (256,), (3, 77), (64, 65), (8, 9, 10), (1000, 3)]


def resident_mib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def prelu_grad_is_right(rng, device, arrays, dtype) -> bool:
    """PReLU's gradient: two outputs and oneDNN's slope rules (per channel, NXC)."""
    x, dy = arrays[0], arrays[-1]
    slope = rng.standard_normal(x.shape[-1]).astype(dtype)
    dx, _ = dml.prelu_grad(x, slope, dy, device=device)
    return np.array_equal(dx, np.where(x > 0, dy, (slope.astype(np.float32) * dy.astype(np.float32)).astype(dtype)))


def elementwise_is_right(name):
    """An element-wise operator of the table against its reference (exact, or within a ULP
    bound for the transcendental ones)."""
    def check(rng, device, arrays, dtype) -> bool:
        scalars = {s.name: float(rng.uniform(0.5, 1.5)) for s in dml.OPERATORS[name].scalars}
        result = getattr(dml, name)(*arrays, **scalars, device=device)
        try:
            assert_matches_reference(name, result, arrays, scalars)
        except AssertionError as error:
            print(f"wrong result: {error}", file=sys.stderr)
            return False
        return True
    return check


def rowwise_is_right(name):
    """A row-wise operator of the table (softmax family) over a random axis, against its reference."""
    def check(rng, device, arrays, dtype) -> bool:
        axes = (int(rng.integers(arrays[0].ndim)),)
        result = getattr(dml, name)(*arrays, axes=axes, device=device)
        try:
            assert_rowwise_matches(name, result, arrays, axes)
        except AssertionError as error:
            print(f"wrong result: {error}", file=sys.stderr)
            return False
        return True
    return check


CHECKS = {**{name: elementwise_is_right(name) for name in [*REFERENCES, *REFERENCES_F64]},
          **{name: rowwise_is_right(name) for name in REFERENCES_ROWWISE if name in FRONT_ENDS},
          "prelu_grad": prelu_grad_is_right}


def bits(array: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(array).view(f"u{np.dtype(array.dtype).itemsize}")


def device_array_chain_is_right(rng, device) -> bool:
    """A chain on device arrays, its source written while a result that reads it is pending:
    each result has the bits of the same calls on the host values it was made from."""
    dtype = DTYPES[rng.integers(len(DTYPES))]
    shape = SHAPES[rng.integers(len(SHAPES))]
    x, y = (rng.standard_normal(shape).astype(dtype) for _ in range(2))
    source = dml.asarray(x, device=device)
    pending = dml.tanh(dml.elu(dml.linear(source, 1.5, -0.25)))
    softmax = dml.softmax(dml.sigmoid(source), axes=(0,))
    source.write(y)
    after = dml.relu_grad(source, dml.elu(source))
    expected = [dml.tanh(dml.elu(dml.linear(x, 1.5, -0.25), device=device), device=device),
                dml.softmax(dml.sigmoid(x, device=device), axes=(0,), device=device),
                dml.relu_grad(y, dml.elu(y, device=device), device=device)]
    return all(np.array_equal(bits(got.numpy()), bits(want)) for got, want in zip((pending, softmax, after), expected))


def command_list_is_right(rng, device) -> bool:
    """Two dependent RELU_GRAD dispatches recorded once and replayed twice over new inputs."""
    count = int(rng.integers(1, 5000))
    desc = dml.BufferTensorDesc(dml.TensorDataType.FLOAT32, (count,))
    compiled = device.compile_cached(dml.ActivationReluGradOperatorDesc(desc, desc, desc))
    x, dy, middle, out = (device.create_buffer(desc.total_tensor_size_in_bytes) for _ in range(4))
    commands = device.create_command_list()
    commands.record_dispatch(device.create_binding_table(compiled, inputs=[x, dy], outputs=[middle]))
    commands.record_dispatch(device.create_binding_table(compiled, inputs=[x, middle], outputs=[out]))
    for _ in range(2):
        xs, dys = (rng.standard_normal(count).astype(np.float32) for _ in range(2))
        x.write(xs)
        dy.write(dys)
        device.execute(commands)
        if not np.array_equal(bits(out.read(np.float32, count)), bits(relu_grad(xs, relu_grad(xs, dys)))):
            return False
    return True


def graph_is_right(rng, device) -> bool:
    """A fused graph against the same operators called one by one."""
    shape = SHAPES[rng.integers(len(SHAPES))]
    values = rng.standard_normal(shape).astype(np.float32)
    builder = dml.GraphBuilder(device)
    x = builder.input(dml.BufferTensorDesc(dml.TensorDataType.FLOAT32, shape))
    y = dml.graph.relu_grad(x, dml.graph.scaled_tanh(dml.graph.elu(dml.graph.linear(x, alpha=2.0, beta=1.0))))
    compiled = builder.build([y])
    buffers = [device.create_buffer(max(16, values.nbytes)) for _ in range(2)]
    buffers[0].write(values)
    device.execute(device.create_binding_table(compiled, inputs=buffers[:1], outputs=buffers[1:]))
    expected = dml.relu_grad(values, dml.scaled_tanh(dml.elu(dml.linear(values, 2.0, 1.0, device=device),
                                                             device=device), device=device), device=device)
    return np.array_equal(bits(buffers[1].read(np.float32, values.size).reshape(shape)), bits(expected))


# What the load draws from besides front-end calls, each about as often as one operator.
STATEFUL = {"device arrays": device_array_chain_is_right, "command list": command_list_is_right,
            "graph": graph_is_right}


def one_dispatch(rng, device) -> bool:
    """Run a random operator on a random layout through the front end, or one of STATEFUL's
    loads, about one draw in four; True when correct."""
    if rng.integers(4) == 0:
        return STATEFUL[sorted(STATEFUL)[rng.integers(len(STATEFUL))]](rng, device)
    dtype = DTYPES[rng.integers(len(DTYPES))]
    shape = SHAPES[rng.integers(len(SHAPES))]
    name = sorted(CHECKS)[rng.integers(len(CHECKS))]
    arrays = [rng.standard_normal(shape).astype(dtype) for _ in dml.OPERATORS[name].inputs]
    view = rng.integers(3)
    if view == 1 and len(shape) >= 2:
        arrays = [a.T for a in arrays]
    elif view == 2:
        arrays[0] = arrays[0][..., ::-1]
    return CHECKS[name](rng, device, arrays, dtype)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=600.0, help="how long to run (default 600)")
    parser.add_argument("--threads", type=int, default=4, help="threads sharing one device (default 4)")
    parser.add_argument("--max-growth-percent", type=float, default=10.0,
                        help="allowed resident memory growth after the warm-up (default 10)")
    args = parser.parse_args(argv)
    if not args.seconds > 0:
        parser.error(f"argument --seconds: {args.seconds} must be more than 0")
    if args.threads < 1:
        parser.error(f"argument --threads: {args.threads} must be at least 1")
    device = dml.create_device()
    counts = {"dispatches": 0, "errors": 0}
    lock = threading.Lock()
    stop = time.monotonic() + args.seconds
    # The caches are bounded but fill as new shapes, dtypes and chains are first seen, and
    # what fills them settles slowly: on lavapipe (eight mixed loads a second) resident
    # memory still rose until about 400 s, so the baseline is taken half way in.
    warm_up = time.monotonic() + args.seconds / 2
    baseline = {}
    samples = [args.seconds * k / 10 for k in range(1, 10)]  # when to print resident memory

    def worker(seed: int) -> None:
        rng = np.random.default_rng(seed)
        while time.monotonic() < stop:
            try:
                correct = one_dispatch(rng, device)
            except Exception as error:  # a soak run counts every failure, whatever its type
                correct = False
                print(f"error: {type(error).__name__}: {error}", file=sys.stderr)
            with lock:
                counts["dispatches"] += 1
                counts["errors"] += not correct
                now = time.monotonic()
                if "rss" not in baseline and now > warm_up:
                    baseline["rss"] = resident_mib()
                if samples and now - started > samples[0]:
                    print(f"{samples.pop(0):.0f} s of {args.seconds:.0f}: {counts['dispatches']} dispatches, "
                          f"errors {counts['errors']}, resident {resident_mib():.0f} MiB", flush=True)

    print(f"soak: {args.seconds:.0f} s of mixed load from {args.threads} thread(s) on {device.adapter_name}; "
          f"memory every {args.seconds / 10:g} s", file=sys.stderr, flush=True)
    start_rss = resident_mib()
    started = time.monotonic()
    threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(args.threads)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started
    end_rss = resident_mib()
    warmed = baseline.get("rss", start_rss)
    growth = 100 * (end_rss - warmed) / warmed
    print(f"soak on {device.adapter_name}: {elapsed:.0f} s, {args.threads} threads")
    print(f"dispatches {counts['dispatches']} ({counts['dispatches'] / elapsed:.0f}/s), errors {counts['errors']}")
    print(f"resident memory: start {start_rss:.0f} MiB, after warm-up {warmed:.0f} MiB, end {end_rss:.0f} MiB "
          f"(growth {growth:+.1f}%, allowed {args.max_growth_percent:.0f}%)")
    judged = args.seconds >= MEMORY_VERDICT_SECONDS
    if not judged:
        print(f"memory growth not judged: a run under {MEMORY_VERDICT_SECONDS} s ends before the caches' memory "
              "settles; results were checked")
    device.close()
    return 0 if counts["errors"] == 0 and (not judged or growth <= args.max_growth_percent) else 1


if __name__ == "__main__":
    sys.exit(main())
