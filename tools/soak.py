#!/usr/bin/env python3
"""A load run: mixed operators, sizes and layouts for a while; reports dispatches per
second, errors, and host memory at the start and the end.

    python tools/soak.py [--seconds 600] [--threads 4]

Every dispatch's result is compared with the NumPy reference (a wrong result counts as an
error); the run fails (exit 1) on any error or when resident memory at the end is more than
--max-growth-percent above what it was after the warm-up (the device's caches are full by
then: they are bounded, so nothing may grow after it).

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

from reference import REFERENCES, REFERENCES_F64, REFERENCES_ROWWISE, assert_matches_reference, assert_rowwise_matches  # noqa: E402

import dmlpy as dml  # noqa: E402
from dmlpy.numpy_api import FRONT_ENDS  # noqa: E402

DTYPES = [np.float32, np.float16, ml_dtypes.bfloat16]
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


def one_dispatch(rng, device) -> bool:
    """Run a random operator on a random layout through the front end; True when correct."""
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
    device = dml.create_device()
    counts = {"dispatches": 0, "errors": 0}
    lock = threading.Lock()
    stop = time.monotonic() + args.seconds
    warm_up = time.monotonic() + min(60.0, args.seconds / 5)
    baseline = {}

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
                if "rss" not in baseline and time.monotonic() > warm_up:
                    baseline["rss"] = resident_mib()

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
    device.close()
    return 0 if counts["errors"] == 0 and growth <= args.max_growth_percent else 1


if __name__ == "__main__":
    sys.exit(main())
