#version 450
// The benchmark's arithmetic yardstick (tools/bench.py, dmlpy/kernels/yardstick.py): FP32
// multiply-then-add pairs in registers, the pair GEMM's inner loop does (acc = acc + a * b),
// each product and each sum rounded on its own (`precise`: no fused multiply-add). Each
// invocation runs ACCUMULATORS independent chains, acc = acc * multiplier + addend, so that
// the device has independent work to overlap (instruction-level parallelism), in ITERATIONS
// trips of a loop whose body takes UNROLL pairs of every chain. No memory traffic but the two
// seeds read from push constants and one word written per invocation at the end (the sum of
// its chains, so that no compiler removes the work).
//
// The values stay normal and finite (no subnormal slow path): chains start at 1 to 32.5 and,
// with a multiplier just below 1 and an addend of 1, grow by about 1 a pair (a few 100,000 at
// most). lavapipe ends an invocation's loops after 65,535 iterations in all: the planner keeps
// ITERATIONS well under it, and the loops over chains and over the body are unrolled.
// The trip count is a constant and the loop is kept (dont_unroll): on lavapipe a trip count
// read from push constants ran at about half the rate, and fully unrolled short loops at a
// fifth or less.
//
// Defines: WORKGROUP_SIZE, ACCUMULATORS, UNROLL, ITERATIONS, INVOCATION_COUNT.
// Binding 0: one FP32 word per invocation. Push constants: the multiplier's and the addend's bits.
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x = WORKGROUP_SIZE) in;
layout(set = 0, binding = 0) writeonly buffer Result { float result[]; };
layout(push_constant) uniform Params { uint multiplier_bits; uint addend_bits; } params;

void main() {
    uint index = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * WORKGROUP_SIZE + gl_LocalInvocationID.x;
    if (index >= INVOCATION_COUNT) return;
    float multiplier = uintBitsToFloat(params.multiplier_bits);
    float addend = uintBitsToFloat(params.addend_bits);
    precise float acc[ACCUMULATORS];
    [[unroll]] for (uint k = 0u; k < ACCUMULATORS; ++k) {
        acc[k] = float((index + k) & 63u) * 0.5 + 1.0;
    }
    [[dont_unroll]] for (uint i = 0u; i < ITERATIONS; ++i) {
        [[unroll]] for (uint u = 0u; u < UNROLL; ++u) {
            [[unroll]] for (uint k = 0u; k < ACCUMULATORS; ++k) {
                acc[k] = acc[k] * multiplier + addend;
            }
        }
    }
    precise float total = acc[0];
    [[unroll]] for (uint k = 1u; k < ACCUMULATORS; ++k) {
        total = total + acc[k];
    }
    result[index] = total;
}
