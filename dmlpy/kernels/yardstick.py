"""The arithmetic yardstick (shaders/multiply_add.comp): a dispatch that performs about a
given number of FP32 multiply-then-add pairs in registers and touches no memory but one word
per invocation. tools/bench.py times it beside a kernel that does the same number of pairs
(a GEMM of M x N x K does M * N * K) and reads the kernel's rate as a fraction of it, as it
reads bandwidth as a fraction of the copy shader's (plan_copy).
"""

from __future__ import annotations

import math
import os

from ..base.adapter import AdapterInfo, AdapterType
from .codegen import KernelPlan, KernelStage, fp32_bits, workgroup_size_for

# Loop iterations an invocation may spend: lavapipe ends an invocation's loops after 65,535
# in all; the loops over chains and the unrolled body are unrolled, so only the outer loop's
# trips count.
MAX_ITERATIONS = 16384

# Each chain runs acc = acc * MULTIPLIER + ADDEND: a multiplier just below 1 keeps every
# product and sum rounded (inexact) and the values growing by about 1 a pair, normal and
# finite for any pair count the planner allows (shaders/multiply_add.comp).
MULTIPLIER = 1.0 - 2.0**-20
ADDEND = 1.0
# The shapes tools/bench.py tries (chains per invocation, pairs of each chain per loop trip):
# on lavapipe (256-bit vectors, 2 cores) 12 x 8 was fastest at 2M and 1G pairs, 16 x 8 the
# slowest (ILP beyond what the registers hold).
SHAPES = ((8, 8), (12, 8), (16, 4))


def target_invocations(adapter: AdapterInfo) -> int:
    """Invocations the planner spreads the pairs over before it lengthens their loops: on a
    GPU enough to fill the SMs or compute units of a large one; on a CPU device (lavapipe:
    a thread per host core), where an invocation costs about as much as 100 pairs, a few
    workgroups per core (on 2 cores 4096 invocations ran 2M pairs twice as fast as 65536)."""
    if adapter.adapter_type == AdapterType.CPU:
        return max(1 << 12, 1024 * (os.cpu_count() or 1))
    return 1 << 17


def plan_multiply_add(pair_count: int, adapter: AdapterInfo, workgroup_size: int | None = None,
                      accumulators: int = 8, unroll: int = 8, invocations: int | None = None) -> KernelPlan:
    """About pair_count FP32 multiply-then-add pairs (at least that many, rounded up to whole
    loop trips and invocations): `accumulators` independent chains per invocation, each loop
    trip `unroll` pairs of every chain, at most MAX_ITERATIONS trips. The plan's element_count
    is the number of pairs the dispatch performs; its scalar_bits are the push constants (the
    two seeds' bits); binding 0 takes one FP32 word per invocation (stage.invocations of
    them). `invocations`: how many to spread the pairs over before lengthening their loops
    (default target_invocations(adapter))."""
    if pair_count < 1 or accumulators < 1 or unroll < 1:
        raise ValueError(f"pair_count {pair_count}, accumulators {accumulators} and unroll {unroll} must be positive")
    workgroup_size = workgroup_size or workgroup_size_for(adapter)
    per_trip = accumulators * unroll
    trips = math.ceil(pair_count / per_trip)  # loop trips over every invocation
    iterations = min(MAX_ITERATIONS, max(1, math.ceil(trips / (invocations or target_invocations(adapter)))))
    invocations = math.ceil(trips / iterations)
    pairs = invocations * iterations * per_trip
    defines = {"WORKGROUP_SIZE": workgroup_size, "ACCUMULATORS": f"{accumulators}u", "UNROLL": f"{unroll}u",
               "ITERATIONS": f"{iterations}u", "INVOCATION_COUNT": f"{invocations}u"}
    stage = KernelStage("main", "multiply_add.comp", defines, workgroup_size, elements_per_item=iterations * per_trip,
                        invocations=invocations)
    reason = (f"{pairs} FP32 multiply-then-add pairs: {invocations} invocations of {accumulators} chains x "
              f"{iterations} loop trips x {unroll} pairs unrolled")
    return KernelPlan("multiply_add", (stage,), pairs, scalar_bits=fp32_bits((MULTIPLIER, ADDEND)),
                      reason=reason)
