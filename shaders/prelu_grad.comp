#version 450
// ACTIVATION_PARAMETERIZED_RELU_GRAD (dmlpy extension, oneDNN's PReLUBackward):
//   OutputGradientTensor      = InputTensor > 0 ? InputGradientTensor : SlopeTensor * InputGradientTensor
//   OutputSlopeGradientTensor = sum over the slope's broadcast dims of (InputTensor > 0 ? 0 : InputTensor * InputGradientTensor)
// Two passes, each its own submission:
//   PASS_TERMS  one invocation per (chunk of 256 reduced elements, slope-gradient element j),
//               neighbouring invocations on neighbouring j: writes dX for its elements and
//               the chunk's FP32 sum to the temporary resource.
//   PASS_SUM    one invocation per j: sums j's chunk sums and writes dSlope[j], rounded once.
// Every sum is pairwise in a fixed order (pairwise_add below), with no float atomics and no
// dependence on the workgroup size: the bits depend on the descs alone, on every device.
//
// Defines: ELEMENT_BITS, DTYPE_*, WORKGROUP_SIZE, PASS_TERMS or PASS_SUM, KEPT_COUNT,
// CHUNK_COUNT, REDUCED_COUNT; the slope gradient's (kept) dims: KEPT_RANK, KEPT_SIZES,
// KEPT_STRIDES (uvec4: input, slope, dY, dX), DSLOPE_STRIDES; the reduced dims:
// REDUCED_RANK, REDUCED_SIZES, REDUCED_STRIDES (uvec4 as above).
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

#define CHUNK 256u
#define STACK_DEPTH 24  // log2 of the most terms one pairwise sum takes, plus one

const uint KEPT_SIZES_[KEPT_RANK] = uint[KEPT_RANK](KEPT_SIZES);
const uvec4 KEPT_STRIDES_[KEPT_RANK] = uvec4[KEPT_RANK](KEPT_STRIDES);
const uint DSLOPE_STRIDES_[KEPT_RANK] = uint[KEPT_RANK](DSLOPE_STRIDES);
const uint REDUCED_SIZES_[REDUCED_RANK] = uint[REDUCED_RANK](REDUCED_SIZES);
const uvec4 REDUCED_STRIDES_[REDUCED_RANK] = uvec4[REDUCED_RANK](REDUCED_STRIDES);

// Pairwise summation by a binary counter: term i is added to the partial sums of equal
// size on the stack while i's low bits are ones, so the terms form the balanced binary
// tree of a power-of-two count, and a fixed shape for any other count.
float stack_sums[STACK_DEPTH];
uint stack_size = 0u;

void pairwise_add(uint i, float term) {
    float value = term;
    for (uint k = i; (k & 1u) != 0u; k >>= 1) {
        precise float pair = stack_sums[--stack_size] + value;
        value = pair;
    }
    stack_sums[stack_size++] = value;
}

float pairwise_total() {
    float total = 0.0;
    for (uint k = stack_size; k > 0u; --k) {  // the smallest partial sums first
        precise float next = stack_sums[k - 1u] + total;
        total = next;
    }
    return total;
}

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
    uint id = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * WORKGROUP_SIZE + gl_LocalInvocationID.x;
    uint dslope_offset;
#if defined(PASS_TERMS)
    if (id >= KEPT_COUNT * CHUNK_COUNT) return;
    uint j = id % KEPT_COUNT, chunk = id / KEPT_COUNT;
    uvec4 base = kept_offsets(j, dslope_offset);
    float slope_value = to_float(slope_load(params.slope + base.y));
    uint first = chunk * CHUNK, count = min(CHUNK, REDUCED_COUNT - first);
    for (uint i = 0u; i < count; ++i) {
        uvec4 offsets = base + reduced_offsets(first + i);
        uint x_bits = x_load(params.x + offsets.x);
        uint dy_bits = dy_load(params.dy + offsets.z);
        bool positive = is_positive(x_bits);
        precise float scaled = slope_value * to_float(dy_bits);
        dx_store(params.dx + offsets.w, positive ? dy_bits : from_float(scaled));
        precise float product = to_float(x_bits) * to_float(dy_bits);
        pairwise_add(i, positive ? 0.0 : product);
    }
    partials[params.partials + chunk * KEPT_COUNT + j] = floatBitsToUint(pairwise_total());
#else
    if (id >= KEPT_COUNT) return;
    for (uint chunk = 0u; chunk < CHUNK_COUNT; ++chunk) {
        pairwise_add(chunk, uintBitsToFloat(partials[params.partials + chunk * KEPT_COUNT + id]));
    }
    kept_offsets(id, dslope_offset);
    dslope_store(params.dslope + dslope_offset, from_float(pairwise_total()));
#endif
}
