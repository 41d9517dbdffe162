#!/usr/bin/env python3
"""Host time of building and compiling large graphs (also `tools/bench.py --graph-compile`).

A graph of N element-wise nodes, each reading the one before as its last input and the
graph input X as its others (LINEAR and RELU_GRAD in turn): GraphBuilder.graph_desc (the
GraphDesc's construction and checks) and device.compile_graph (checked again, fused into
kernels of MAX_FUSED_NODES nodes, SPIR-V looked up). Every full kernel of such a chain has
the same shader, so after the warm-up round every shader comes from the device's cache and
the time is the graph's own work, which must grow linearly with N.

    python tools/bench_graph_compile.py                     # chains of 1,000 and 4,000 nodes, 5 rounds
    python tools/bench_graph_compile.py --nodes 500,2000,8000 --rounds 3 --json compile.json

Exit status: 0 done, 2 a usage error.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import dmlpy as dml

STEPS = [("linear", {"alpha": 0.5, "beta": 0.25}), ("relu_grad", {})]


def _compile_once(device, nodes: int) -> tuple[float, float]:
    """(seconds in graph_desc, seconds in compile_graph) for a chain of `nodes` nodes."""
    builder = dml.GraphBuilder(device)
    x = builder.input(dml.BufferTensorDesc(dml.TensorDataType.FLOAT32, (256,)))
    y = dml.graph.chain(x, (STEPS * (nodes // 2 + 1))[:nodes])
    # As timeit does: no garbage collection in the timed part (it would charge the earlier
    # graphs' cycles, GraphValues refer to their builder, to whichever graph runs then).
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        graph = builder.graph_desc([y])
        middle = time.perf_counter()
        device.compile_graph(graph)
        end = time.perf_counter()
    finally:
        gc.enable()
    return middle - start, end - middle


def graph_compile_rows(device, node_counts: list[int], rounds: int) -> list[dict]:
    """Each count timed once per round, the counts interleaved within a round (the first
    round warms the shader cache up); medians over rounds, and the ratio of each count's
    total to the smallest count's, per round."""
    counts = sorted(node_counts)
    samples = {count: [] for count in counts}
    for repeat in range(rounds + 1):
        for count in counts:
            times = _compile_once(device, count)
            if repeat:
                samples[count].append(times)
    rows = []
    for count in counts:
        totals = [a + b for a, b in samples[count]]
        ratios = [t / (a + b) for t, (a, b) in zip(totals, samples[counts[0]])]
        rows.append({"nodes": count, "graph_desc_s": statistics.median(a for a, _ in samples[count]),
                     "compile_graph_s": statistics.median(b for _, b in samples[count]),
                     "total_s": statistics.median(totals), "ratio_to_smallest": statistics.median(ratios),
                     "ratio_low": min(ratios), "ratio_high": max(ratios)})
    return rows


def print_table(columns: list[tuple[str, int, Callable[[dict], str]]], rows: list[dict], legend: list[str]) -> None:
    """A table of `rows`: each column a (heading, width, cell) with cell(row) its text, the
    first left-aligned and the others right-aligned; the legend's lines and a blank line after."""
    def line(cells: list[str]) -> str:
        return " ".join(f"{cell:{'<' if k == 0 else '>'}{width}}" for k, (cell, (_, width, _)) in
                        enumerate(zip(cells, columns)))
    print(line([heading for heading, _, _ in columns]))
    for row in rows:
        print(line([cell(row) for _, _, cell in columns]))
    print("\n".join(legend) + "\n")


def print_graph_compile(rows: list[dict]) -> None:
    print_table([("graph compile: a chain of element-wise nodes (host s)", 54, lambda row: ""),
                 ("nodes", 6, lambda row: f"{row['nodes']}"),
                 ("graph_desc", 10, lambda row: f"{row['graph_desc_s']:.3f}"),
                 ("compile", 8, lambda row: f"{row['compile_graph_s']:.3f}"),
                 ("total", 8, lambda row: f"{row['total_s']:.3f}"),
                 ("us/node", 8, lambda row: f"{row['total_s'] / row['nodes'] * 1e6:.1f}"),
                 ("/smallest", 9, lambda row: f"{row['ratio_to_smallest']:.2f}x"),
                 ("spread", 12, lambda row: f"{row['ratio_low']:.2f}-{row['ratio_high']:.2f}")], rows,
                ["graph_desc: GraphBuilder.graph_desc (the GraphDesc built and checked); "
                 "compile: device.compile_graph;",
                 "/smallest: the total over the smallest graph's in the same round "
                 "(linear: the ratio of node counts)."])


def positive_ints(text: str) -> list[int]:
    """--nodes and --rounds: comma-separated positive integers."""
    try:
        values = [int(part) for part in text.split(",")]
    except ValueError:
        values = [0]
    if min(values) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not positive integers, comma-separated")
    return values


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=positive_ints, default=[1000, 4000], help="comma-separated node counts")
    parser.add_argument("--rounds", type=lambda text: positive_ints(text)[0], default=5,
                        help="interleaved rounds after a warm-up one (default 5)")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    with dml.create_device() as device:
        rows = graph_compile_rows(device, args.nodes, args.rounds)
        print(f"# {device.adapter_name}, {args.rounds} interleaved rounds")
    print_graph_compile(rows)
    if args.json:
        args.json.write_text(json.dumps({"graph_compile": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
