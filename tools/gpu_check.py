#!/usr/bin/env python3
"""make gpu-check: run the suite and the quick benchmark on this machine's Vulkan device and
write a short report to docs/devices/<device>.md: device, driver, limits, float controls,
which arithmetic dmlpy chose, the suite's result and the benchmark's table.

    python tools/gpu_check.py                      # the adapter create_device() picks
    python tools/gpu_check.py --adapter "H100"     # by index, name or UUID
    python tools/gpu_check.py --pytest-args "-x -k relu" --log /tmp/suite.log

Meant for a machine with a GPU (../shared/gpu/README.md has a recipe for one without apt);
on lavapipe it reports lavapipe. The suite's whole output is kept in a log file (--log,
default build/gpu-check/<device>.log), whose path the report and the last line name. The
suite runs under --python (default: this Python), which must have pytest and hypothesis
(and pytest-xdist for -n in --pytest-args): checked before anything runs.

Exit status: the suite's (0 every test passed); 2 a usage error; 3 the Python that runs
the suite lacks pytest, hypothesis or pytest-xdist (the line says which and how to install it).
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

MISSING_TEST_TOOLS = 3
# The suite's own needs (pyproject's `test` extra): import name -> what pip installs.
TEST_TOOLS = {"pytest": "pytest", "hypothesis": "hypothesis"}


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:60] or "device"


def run(command: list[str], env: dict) -> tuple[int, str]:
    """The command's exit status and its standard output; its standard error (a tool's
    progress) only where it failed."""
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    return result.returncode, result.stdout + (result.stderr if result.returncode else "")


def uses_xdist(pytest_args: list[str]) -> bool:
    return any(arg == "-n" or arg.startswith("-n") or arg.startswith("--numprocesses") for arg in pytest_args)


def missing_test_tools(python: str, pytest_args: list[str]) -> list[str]:
    """The pip names of the test tools `python` cannot import; OSError if it cannot run."""
    tools = {**TEST_TOOLS, **({"xdist": "pytest-xdist"} if uses_xdist(pytest_args) else {})}
    probe = ("import importlib.util, sys; "
             "print(' '.join(m for m in sys.argv[1:] if importlib.util.find_spec(m) is None))")
    result = subprocess.run([python, "-c", probe, *tools], capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise OSError(f"it exited with status {result.returncode}: {result.stderr.strip()[-200:]}")
    return [tools[module] for module in result.stdout.split()]


def run_suite(python: str, pytest_args: list[str], env: dict, log: Path) -> tuple[int, str]:
    """The suite's exit status and output, written to `log` as it runs (so a run cut short
    still leaves what it printed)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as file:
        status = subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rf", *pytest_args],
                                cwd=ROOT, env=env, stdout=file, stderr=subprocess.STDOUT).returncode
    return status, log.read_text(errors="replace")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--adapter", help="adapter index, name or UUID (default: DMLPY_ADAPTER, else the first GPU)")
    parser.add_argument("--pytest-args", default="", help="extra pytest arguments")
    parser.add_argument("--out-dir", type=Path, default=ROOT / "docs" / "devices")
    parser.add_argument("--log", type=Path, help="where to keep the suite's output (default: "
                        "build/gpu-check/<device>.log)")
    parser.add_argument("--python", default=sys.executable,
                        help="the Python that runs the suite and the benchmark (default: this one)")
    args = parser.parse_args(argv)
    try:
        pytest_args = shlex.split(args.pytest_args)
    except ValueError as error:
        parser.error(f"argument --pytest-args: {error}")
    try:
        missing = missing_test_tools(args.python, pytest_args)
    except (OSError, subprocess.TimeoutExpired) as error:
        parser.error(f"argument --python: {args.python} cannot run: {getattr(error, 'strerror', None) or error}")
    if missing:
        print(f"gpu-check: {args.python} cannot import {', '.join(missing)}, which the suite needs: "
              f"install with `{args.python} -m pip install {' '.join(missing)}`", file=sys.stderr)
        return MISSING_TEST_TOOLS
    with dml.create_device(adapter=args.adapter) as device:
        adapter = device.adapter
    env = {**os.environ, "DMLPY_ADAPTER": str(adapter.index)}
    log = args.log or ROOT / "build" / "gpu-check" / f"{slug(adapter.name)}.log"
    print(f"gpu-check: running the suite on {adapter.name} (log: {log})", file=sys.stderr, flush=True)
    suite_status, suite_log = run_suite(args.python, pytest_args, env, log)
    summary = [line for line in suite_log.splitlines() if re.search(r"\d+ (passed|failed)", line)]
    failures = [line for line in suite_log.splitlines() if line.startswith("FAILED")]
    print("gpu-check: running tools/bench.py --quick", file=sys.stderr, flush=True)
    bench_status, bench_log = run([args.python, "tools/bench.py", "--quick"], env)

    fields = dataclasses.asdict(adapter)
    limits = "\n".join(f"| {key} | {value} |" for key, value in fields.items() if key not in ("index",))
    arithmetic = ", ".join(float_controls_defines(adapter)) or "the hardware's (subnormals kept natively)"
    result = summary[-1].strip("= ") if summary else "no summary line (see the log)"
    report = f"""# {adapter.name}

Written by `make gpu-check` (tools/gpu_check.py) on {datetime.date.today()}.

- driver: {adapter.driver or "not reported"}; Vulkan {adapter.api_version}
- FP32 subnormals: {adapter.denormals}; kernels' float controls: {arithmetic}
- suite: {result} (exit status {suite_status}); the log, on the machine that ran it: `{log}`
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
    print(f"gpu-check: {path}: suite exit status {suite_status}; the suite's output: {log}")
    return suite_status


if __name__ == "__main__":
    sys.exit(main())
