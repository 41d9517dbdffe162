#!/usr/bin/env python3
"""Before and after in one run: each case's time under another revision of dmlpy beside this
checkout's, interleaved round by round with the device's copy yardstick.

Each tree runs in a worker process of its own (its own dmlpy and its own tools/bench.py) on
the same device. Every round asks the other revision's worker and this checkout's for one
run of the case each, which goes first alternating from round to round, then this checkout's
copy shaders (the fastest shape is the round's yardstick), so a machine whose speed drifts
between rounds (a shared CPU's clock, another tenant) moves both sides alike; after/before is
taken round by round, and its median and spread are reported beside each side's ratio to the
copy limit and the copy's GB/s. Separate runs alternated by hand measure the drift as much as
the change. Measure an unchanged case beside the changed ones: how far its after/before lies
from 1 is the run's noise.

    python tools/bench_against.py HEAD~1 --cases "maximum float16 packed" --sizes 16777216 --rounds 9
    python tools/bench_against.py ../other-checkout --cases "add float16 packed,less float16 packed"

REV is a git revision (checked out into a temporary worktree, removed afterwards) or the path
of another checkout; a case must exist in both trees' tools/bench.py (--list-cases there).
Progress goes to standard error. Exit status: 0 done, 1 a worker failed (its error above), 2 a
usage error.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def serve(tree: Path) -> None:
    """The worker: this tree's dmlpy and bench.py, answering one JSON request a line. It sets
    a case up as bench.py's run_case does, but through what every revision's bench.py has
    (CASES, build, Device) and dmlpy's public calls, so that it runs under older trees too."""
    sys.path[:0] = [str(tree), str(tree / "tools"), str(tree / "tests")]
    import bench

    import dmlpy as dml

    device = dml.create_device()
    timer = bench.Device(device)
    op_run = copy_runs = None
    buffers: list = []
    for line in sys.stdin:
        request = json.loads(line)
        if "case" in request:
            for buffer in buffers:
                buffer.destroy()
            op, _, moved, _ = bench.build(bench.CASES[request["case"]], request["count"])
            compiled = device.compile_operator(device.create_operator(op))
            buffers = [device.create_buffer(getattr(op, f.name).total_tensor_size_in_bytes) for f in op.schema.tensors]
            inputs = len(op.schema.inputs)
            temporary = compiled.binding_properties.temporary_resource_size
            if temporary:
                buffers.append(device.create_buffer(temporary))
            table = device.create_binding_table(compiled, inputs=buffers[:inputs],
                                                outputs=buffers[inputs:len(op.schema.tensors)],
                                                temporary=buffers[-1] if temporary else None)
            op_run = timer.table_run(table)
            op_run()  # warm-up: pipeline creation and first touches stay out
            # Short runs are repeated within a round (median), as bench.py does.
            repeat = max(1, min(25, int(0.01 / max(op_run(), 1e-6))))
            reply = {"moved": moved, "repeat": repeat}
            if request.get("copies"):
                shapes, _, copy_bytes, copy_buffers = timer.copy_runs(moved)
                buffers += copy_buffers
                copy_runs = [run for name, run in shapes.items() if name.startswith("copy ")]
                for run in copy_runs:
                    run()
                reply["copy_bytes"] = copy_bytes
        elif request["run"] == "op":
            reply = {"seconds": statistics.median(op_run() for _ in range(request["repeat"]))}
        else:  # the fastest copy shape this round
            reply = {"seconds": min(statistics.median(run() for _ in range(request["repeat"])) for run in copy_runs)}
        print(json.dumps(reply), flush=True)


class Worker:
    """A worker process for one tree."""

    def __init__(self, tree: Path):
        env = {**os.environ, "PYTHONPATH": str(tree)}
        self.process = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--worker", str(tree)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=tree, env=env)

    def ask(self, **request) -> dict:
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the worker stopped (exit status {self.process.wait()}); its error is above")
        return json.loads(line)

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()


def commit_of(revision: str) -> str | None:
    """The commit `revision` names in this checkout's repository, or None."""
    found = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}"], cwd=ROOT,
                           capture_output=True, text=True)
    return found.stdout.strip() if found.returncode == 0 else None


@contextlib.contextmanager
def checkout(revision: str):
    """The tree of `revision`: a directory as it is, else a temporary git worktree of its commit."""
    if Path(revision).is_dir():
        yield Path(revision).resolve()
        return
    with tempfile.TemporaryDirectory(prefix="dmlpy-before-") as parent:
        tree = Path(parent) / "tree"
        subprocess.run(["git", "worktree", "add", "--detach", "--quiet", str(tree), commit_of(revision)],
                       cwd=ROOT, check=True)
        try:
            yield tree
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, check=False)


def describe(tree: Path) -> str:
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=tree, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=tree, capture_output=True,
                           text=True)
    return (head.stdout.strip() or str(tree)) + (" with changes" if dirty.stdout.strip() else "")


def measure(before: Worker, after: Worker, case: str, count: int, rounds: int) -> dict:
    setup = before.ask(case=case, count=count)
    ours = after.ask(case=case, count=count, copies=True)
    if setup["moved"] != ours["moved"]:
        raise RuntimeError(f"{case} moves {setup['moved']} bytes before and {ours['moved']} after: "
                           "the trees build it differently")
    repeat = max(setup["repeat"], ours["repeat"])
    samples: dict[str, list[float]] = {"before": [], "after": [], "copy": []}
    for r in range(rounds):
        # Which side runs first alternates: the second run of a round may find the machine
        # warmer (a CPU device ran the case 3-4% faster there, with the same kernel both sides).
        for side, worker in ((("before", before), ("after", after))[::1 if r % 2 == 0 else -1]):
            samples[side].append(worker.ask(run="op", repeat=repeat)["seconds"])
        samples["copy"].append(after.ask(run="copy", repeat=repeat)["seconds"])
    moved, copy_bytes = ours["moved"], ours["copy_bytes"]

    def over_copy(side):
        return statistics.median((moved / t) / (copy_bytes / c) for t, c in zip(samples[side], samples["copy"]))
    ratios = sorted(a / b for a, b in zip(samples["after"], samples["before"]))
    return {"case": case, "elements": count, "before_ms": statistics.median(samples["before"]) * 1e3,
            "after_ms": statistics.median(samples["after"]) * 1e3, "after_over_before": statistics.median(ratios),
            "spread": (ratios[0], ratios[-1]), "before_over_copy": over_copy("before"),
            "after_over_copy": over_copy("after"),
            "copy_gb_s": statistics.median(copy_bytes / c for c in samples["copy"]) / 1e9}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    parser.add_argument("revision", metavar="REV", help="the git revision or checkout to measure against")
    parser.add_argument("--cases", required=True, help="comma-separated case names, as tools/bench.py --list-cases")
    parser.add_argument("--sizes", default="16777216", help="comma-separated element counts (default 16777216)")
    parser.add_argument("--rounds", default="7", help="interleaved rounds (default 7)")
    args = parser.parse_args(argv)
    sys.path[:0] = [str(ROOT / "tools")]
    from bench import case_list, element_counts, positive_int

    try:
        cases = [case.name for case in case_list(args.cases)]
        sizes = element_counts(args.sizes)
        rounds = positive_int(args.rounds)
    except argparse.ArgumentTypeError as error:
        parser.error(str(error))
    if not Path(args.revision).is_dir() and commit_of(args.revision) is None:
        parser.error(f"{args.revision!r} is neither a directory nor a git revision")
    with checkout(args.revision) as tree:
        before, after = Worker(tree), Worker(ROOT)
        try:
            rows = []
            for k, (case, count) in enumerate((c, n) for c in cases for n in sizes):
                print(f"bench_against: {k + 1}/{len(cases) * len(sizes)} {case} at {count} elements", file=sys.stderr)
                rows.append(measure(before, after, case, count, rounds))
        except RuntimeError as error:
            print(f"bench_against.py: {error}", file=sys.stderr)
            return 1
        finally:
            before.close()
            after.close()
        label = describe(tree)
    print(f"# before: {args.revision} ({label}); after: {describe(ROOT)}; {rounds} interleaved rounds, each "
          "the case before and after (which first alternating), then the copy yardstick")
    print(f"{'case':<36} {'elements':>9} {'before ms':>10} {'after ms':>9} {'after/before':>12} {'spread':>11} "
          f"{'before /copy':>12} {'after /copy':>11} {'copy GB/s':>9}")
    for row in rows:
        low, high = row["spread"]
        print(f"{row['case']:<36} {row['elements']:>9} {row['before_ms']:>10.3f} {row['after_ms']:>9.3f} "
              f"{row['after_over_before']:>12.3f} {low:>5.2f}-{high:<5.2f} {row['before_over_copy']:>12.2f} "
              f"{row['after_over_copy']:>11.2f} {row['copy_gb_s']:>9.2f}")
    print("\nafter/before: the after run's time over the before run's of the same round, median over rounds\n"
          "(below 1: faster after); spread: the lowest and highest round; /copy: the bytes the case moves\n"
          "per second over the fastest copy shader's in the same round (this checkout's copy shaders).")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:  # a Worker's process, for the tree named next
        serve(Path(sys.argv[2]))
    else:
        sys.exit(main())
