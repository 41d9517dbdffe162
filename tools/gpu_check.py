#!/usr/bin/env python3
"""make gpu-check: run the suite and the quick benchmark on this machine's Vulkan device and
write a short report to docs/devices/<device>.md: device, driver, limits, float controls,
which arithmetic dmlpy chose, the suite's result and the benchmark's table.

    python tools/gpu_check.py                      # the adapter create_device() picks
    python tools/gpu_check.py --adapter "H100"     # by index, name or UUID
    python tools/gpu_check.py --pytest-args "-x -k relu"

Meant for a machine with a GPU (../shared/gpu/README.md has a recipe for one without apt);
on lavapipe it reports lavapipe. Exit status: the suite's.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import dmlpy as dml  # noqa: E402
from dmlpy.kernels.codegen import float_controls_defines  # noqa: E402


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:60] or "device"


def run(command: list[str], env: dict) -> tuple[int, str]:
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    return result.returncode, result.stdout + result.stderr


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--adapter", help="adapter index, name or UUID (default: DMLPY_ADAPTER, else the first GPU)")
    parser.add_argument("--pytest-args", default="", help="extra pytest arguments")
    parser.add_argument("--out-dir", type=Path, default=ROOT / "docs" / "devices")
    args = parser.parse_args(argv)
    with dml.create_device(adapter=args.adapter) as device:
        adapter = device.adapter
    env = {**os.environ, "DMLPY_ADAPTER": str(adapter.index)}
    suite_status, suite_log = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rf",
                                   *shlex.split(args.pytest_args)], env)
    summary = [line for line in suite_log.splitlines() if re.search(r"\d+ (passed|failed)", line)]
    failures = [line for line in suite_log.splitlines() if line.startswith("FAILED")]
    bench_status, bench_log = run([sys.executable, "tools/bench.py", "--quick"], env)

    fields = dataclasses.asdict(adapter)
    limits = "\n".join(f"| {key} | {value} |" for key, value in fields.items() if key not in ("index",))
    arithmetic = ", ".join(float_controls_defines(adapter)) or "the hardware's (subnormals kept natively)"
    report = f"""# {adapter.name}

Written by `make gpu-check` (tools/gpu_check.py) on {datetime.date.today()}.

- driver: {adapter.driver or "not reported"}; Vulkan {adapter.api_version}
- FP32 subnormals: {adapter.denormals}; kernels' float controls: {arithmetic}
- suite: {summary[-1].strip("= ") if summary else "no summary (see the log)"} (exit status {suite_status})
{"".join(f"  - {line}{chr(10)}" for line in failures[:20])}
## Adapter as dmlpy sees it

| field | value |
| --- | --- |
{limits}

## Benchmark (`tools/bench.py --quick`, exit status {bench_status})

```
{bench_log.strip()}
```
"""
    args.out_dir.mkdir(parents=True, exist_ok=True)
    path = args.out_dir / f"{slug(adapter.name)}.md"
    path.write_text(report)
    print(f"gpu-check: {path}: suite exit status {suite_status}")
    return suite_status


if __name__ == "__main__":
    sys.exit(main())
