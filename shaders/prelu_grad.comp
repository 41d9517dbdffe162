#version 450
// ACTIVATION_PARAMETERIZED_RELU_GRAD (dmlpy extension, oneDNN's PReLUBackward):
//   OutputGradientTensor      = InputTensor > 0 ? InputGradientTensor : SlopeTensor * InputGradientTensor
//   OutputSlopeGradientTensor = sum over the slope's broadcast dims of (InputTensor > 0 ? 0 : InputTensor * InputGradientTensor)
// Two passes, each its own submission:
//   PASS_TERMS  one workgroup per (slope-gradient element j, chunk of 256 reduced elements):
//               writes dX for those elements and the chunk's FP32 sum to the temporary resource.
//   PASS_SUM    one workgroup per j: sums j's chunk sums and writes dSlope[j], rounded once.
// Both sums are one fixed binary tree over 256 leaves whatever WORKGROUP_SIZE is, with no
// float atomics, so the bits depend on the descs alone: the same on every run and device.
//
// Defines: ELEMENT_BITS, DTYPE_*, WORKGROUP_SIZE (a power of two up to 256), PASS_TERMS or
// PASS_SUM, GROUP_COUNT, CHUNK_COUNT, REDUCED_COUNT; the slope gradient's (kept) dims:
// KEPT_RANK, KEPT_SIZES, KEPT_STRIDES (uvec4: input, slope, dY, dX), DSLOPE_STRIDES; the
// reduced dims: REDUCED_RANK, REDUCED_SIZES, REDUCED_STRIDES (uvec4 as above).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "tensor_storage.glsl"
#include "numeric.glsl"

layout(local_size_x = WORKGROUP_SIZE) in;

TENSOR_INPUT(0, x)
TENSOR_INPUT(1, slope)
TENSOR_INPUT(2, dy)
TENSOR_OUTPUT(3, dx)
TENSOR_OUTPUT(4, dslope)
layout(set = 0, binding = 5) buffer Partials { uint partials[]; };  // FP32 bit patterns

layout(push_constant) uniform Params {
    uint x, slope, dy, dx, dslope;  // first elements, in elements
    uint partials;  // first word of the temporary resource
} params;

#define LEAVES 256u
#define LEAVES_PER_THREAD (LEAVES / WORKGROUP_SIZE)

const uint KEPT_SIZES_[KEPT_RANK] = uint[KEPT_RANK](KEPT_SIZES);
const uvec4 KEPT_STRIDES_[KEPT_RANK] = uvec4[KEPT_RANK](KEPT_STRIDES);
const uint DSLOPE_STRIDES_[KEPT_RANK] = uint[KEPT_RANK](DSLOPE_STRIDES);
const uint REDUCED_SIZES_[REDUCED_RANK] = uint[REDUCED_RANK](REDUCED_SIZES);
const uvec4 REDUCED_STRIDES_[REDUCED_RANK] = uvec4[REDUCED_RANK](REDUCED_STRIDES);

shared float tree[WORKGROUP_SIZE];

// The sum of 256 leaves, leaf g held by thread g % WORKGROUP_SIZE at index g / WORKGROUP_SIZE:
// level by level leaf g += leaf g + span, for span = 128, 64, ..., 1. Levels with span at
// least WORKGROUP_SIZE pair leaves of one thread; the rest go through shared memory.
float tree_sum(float leaves[LEAVES_PER_THREAD]) {
    [[unroll]] for (uint span = LEAVES_PER_THREAD / 2u; span > 0u; span /= 2u) {
        [[unroll]] for (uint i = 0u; i < span; ++i) {
            precise float pair = leaves[i] + leaves[i + span];
            leaves[i] = pair;
        }
    }
    uint t = gl_LocalInvocationID.x;
    tree[t] = leaves[0];
    barrier();
    for (uint span = WORKGROUP_SIZE / 2u; span > 0u; span /= 2u) {
        if (t < span) {
            precise float pair = tree[t] + tree[t + span];
            tree[t] = pair;
        }
        barrier();
    }
    return tree[0];
}

// Offsets of slope-gradient element j's kept coordinates: (input, slope, dY, dX) and dSlope.
uvec4 kept_offsets(uint j, out uint dslope_offset) {
    uvec4 offsets = uvec4(0u);
    dslope_offset = 0u;
    [[unroll]] for (int d = KEPT_RANK - 1; d >= 0; --d) {
        uint coordinate = j % KEPT_SIZES_[d];
        j /= KEPT_SIZES_[d];
        offsets += coordinate * KEPT_STRIDES_[d];
        dslope_offset += coordinate * DSLOPE_STRIDES_[d];
    }
    return offsets;
}

uvec4 reduced_offsets(uint r) {
    uvec4 offsets = uvec4(0u);
    [[unroll]] for (int d = REDUCED_RANK - 1; d >= 0; --d) {
        offsets += (r % REDUCED_SIZES_[d]) * REDUCED_STRIDES_[d];
        r /= REDUCED_SIZES_[d];
    }
    return offsets;
}

void main() {
    uint group = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (group >= GROUP_COUNT) return;  // the whole workgroup leaves: no barrier is skipped
    uint t = gl_LocalInvocationID.x;
    float leaves[LEAVES_PER_THREAD];
#if defined(PASS_TERMS)
    uint chunk = group % CHUNK_COUNT;
    uint dslope_offset;
    uvec4 base = kept_offsets(group / CHUNK_COUNT, dslope_offset);
    float slope_value = to_float(slope_load(params.slope + base.y));
    [[unroll]] for (uint i = 0u; i < LEAVES_PER_THREAD; ++i) {
        uint r = chunk * LEAVES + i * WORKGROUP_SIZE + t;
        float term = 0.0;
        if (r < REDUCED_COUNT) {
            uvec4 offsets = base + reduced_offsets(r);
            uint x_bits = x_load(params.x + offsets.x);
            uint dy_bits = dy_load(params.dy + offsets.z);
            bool positive = is_positive(x_bits);
            precise float scaled = slope_value * to_float(dy_bits);
            dx_store(params.dx + offsets.w, positive ? dy_bits : from_float(scaled));
            precise float product = to_float(x_bits) * to_float(dy_bits);
            term = positive ? 0.0 : product;
        }
        leaves[i] = term;
    }
    float total = tree_sum(leaves);
    if (t == 0u) partials[params.partials + group] = floatBitsToUint(total);
#else
    // Leaf g sums chunks g, g + 256, ... in order; then the tree as above.
    uint first = params.partials + group * CHUNK_COUNT;
    [[unroll]] for (uint i = 0u; i < LEAVES_PER_THREAD; ++i) {
        float lane_sum = 0.0;
        for (uint chunk = i * WORKGROUP_SIZE + t; chunk < CHUNK_COUNT; chunk += LEAVES) {
            precise float next = lane_sum + uintBitsToFloat(partials[first + chunk]);
            lane_sum = next;
        }
        leaves[i] = lane_sum;
    }
    float total = tree_sum(leaves);
    if (t == 0u) {
        uint dslope_offset;
        kept_offsets(group, dslope_offset);
        dslope_store(params.dslope + dslope_offset, from_float(total));
    }
#endif
}
