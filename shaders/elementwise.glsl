// Element-wise kernel over two inputs and one output: output = apply_op(input0, input1).
// The operator's .comp file includes this and defines apply_op on raw element bits.
//
// One mechanism, three layouts chosen at compile time from the descs:
//   PATH_PACKED   all tensors share one dense layout: each invocation maps VECTOR_WORDS
//                 whole words of every tensor, in memory order (16-byte vector loads and
//                 stores when VECTOR_WORDS is 4), so nothing is indexed or shared.
//   PATH_GATHER   the output is packed row-major: each invocation owns one output word and
//                 gathers its elements from the strided inputs.
//   PATH_STRIDED  anything else: each invocation maps one element; sub-word outputs are
//                 merged atomically (see tensor_storage.glsl).
//
// Defines: ELEMENT_BITS, DTYPE_*, WORKGROUP_SIZE, one PATH_*, VECTOR_WORDS (1 or 4) for
// PATH_PACKED, and for PATH_GATHER and
// PATH_STRIDED: RANK, SIZES and STRIDES (one uvec3 per dim: input0, input1, output0 element
// strides), the descs' dims after merging contiguous ones. The element count is a push
// constant: a packed tensor in a buffer larger than one binding can cover is run as
// several windows of the same shader.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require

#include "tensor_storage.glsl"
#include "numeric.glsl"

layout(local_size_x = WORKGROUP_SIZE) in;

TENSOR_INPUT(0, input0)
TENSOR_INPUT(1, input1)
TENSOR_OUTPUT(2, output0)
#if defined(PATH_PACKED) && VECTOR_WORDS == 4
TENSOR_VECTORS(0, input0, readonly)
TENSOR_VECTORS(1, input1, readonly)
TENSOR_VECTORS(2, output0, writeonly)
#endif

layout(push_constant) uniform Params {
    // Where each tensor's first element of this dispatch lies in its binding, in elements.
    // Whole words on PATH_PACKED, and for the output on PATH_GATHER (the planner checks the
    // descs' guaranteed_base_offset_alignment); any element on PATH_STRIDED.
    uint input0;
    uint input1;
    uint output0;
    uint element_count;
    // The operator's FP32 scalars, as bits. Push constants, never #defines: a driver may fold
    // arithmetic on a constant without IEEE care (x * 0.0 -> +0 where IEEE says -0 or NaN).
    uint scalar0_bits;
    uint scalar1_bits;
} params;

#if defined(PATH_PACKED)
#define ELEMENTS_PER_ITEM (VECTOR_WORDS * ELEMENTS_PER_WORD)
#else
#define ELEMENTS_PER_ITEM RUN_LENGTH  // a multiple of ELEMENTS_PER_WORD on PATH_GATHER
#endif

uint ceil_div(uint a, uint b) {
    return a / b + (a % b != 0u ? 1u : 0u);  // no a + b - 1: a may be near 2^32
}

uint apply_op(uint input0_bits, uint input1_bits);

// The first `lanes` elements of a word of each input, mapped into `result`'s lanes.
uint apply_word(uint a, uint b, uint result, uint lanes) {
    [[unroll]] for (uint lane = 0u; lane < ELEMENTS_PER_WORD; ++lane) {
        if (lane < lanes) result = with_lane_bits(result, lane, apply_op(lane_bits(a, lane), lane_bits(b, lane)));
    }
    return result;
}

#if !defined(PATH_PACKED)
const uint TENSOR_SIZES[RANK] = uint[RANK](SIZES);
const uvec3 TENSOR_STRIDES[RANK] = uvec3[RANK](STRIDES);

// Element offsets of logical element e (row-major over SIZES) in input0, input1, output0.
uvec3 element_offsets(uint e) {
    uvec3 offsets = uvec3(0u);
    [[unroll]] for (int d = RANK - 1; d >= 0; --d) {
        offsets += (e % TENSOR_SIZES[d]) * TENSOR_STRIDES[d];
        e /= TENSOR_SIZES[d];
    }
    return offsets;
}

// The offsets of element e, given those of element e - 1: one step along the innermost
// dim, or computed afresh where e starts a new row.
uvec3 next_offsets(uvec3 previous, uint e) {
    return e % TENSOR_SIZES[RANK - 1] == 0u ? element_offsets(e) : previous + TENSOR_STRIDES[RANK - 1];
}

uint apply_at(uvec3 offsets) {
    return apply_op(input0_load(params.input0 + offsets.x), input1_load(params.input1 + offsets.y));
}
#endif

void main() {
    // A 2-D grid reaches past maxComputeWorkGroupCount[0]; the groups past the last one
    // needed idle, before `item` could wrap around 2^32.
    uint item_count = ceil_div(params.element_count, ELEMENTS_PER_ITEM);
    uint group = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (group >= ceil_div(item_count, WORKGROUP_SIZE)) return;
    uint item = group * WORKGROUP_SIZE + gl_LocalInvocationID.x;
    if (item >= item_count) return;

#if defined(PATH_STRIDED)
    // A run of RUN_LENGTH consecutive elements, offsets stepped from one to the next.
    uint first = item * RUN_LENGTH;
    uvec3 offsets = element_offsets(first);
    for (uint e = first; e < min(first + RUN_LENGTH, params.element_count); ++e) {
        if (e > first) offsets = next_offsets(offsets, e);
        output0_store(params.output0 + offsets.z, apply_at(offsets));
    }
#elif defined(PATH_PACKED)
    uint first_word = item * VECTOR_WORDS;
    uint in0 = params.input0 / ELEMENTS_PER_WORD, in1 = params.input1 / ELEMENTS_PER_WORD;
    uint out0 = params.output0 / ELEMENTS_PER_WORD;
#if VECTOR_WORDS == 4
    if ((first_word + 4u) * ELEMENTS_PER_WORD <= params.element_count) {  // a whole vector
        uvec4 a = input0_vec4[in0 / 4u + item], b = input1_vec4[in1 / 4u + item], result;
        [[unroll]] for (uint k = 0u; k < 4u; ++k) result[k] = apply_word(a[k], b[k], 0u, ELEMENTS_PER_WORD);
        output0_vec4[out0 / 4u + item] = result;
        return;
    }
#endif
    // Word by word, so no load passes the tensor's last word; lanes past the last element
    // (only in that word) keep their bits.
    uint word_count = ceil_div(params.element_count, ELEMENTS_PER_WORD);
    for (uint w = first_word; w < min(first_word + VECTOR_WORDS, word_count); ++w) {
        uint lanes = min(ELEMENTS_PER_WORD, params.element_count - w * ELEMENTS_PER_WORD);
        uint kept = lanes < ELEMENTS_PER_WORD ? output0[out0 + w] : 0u;
        output0[out0 + w] = apply_word(input0[in0 + w], input1[in1 + w], kept, lanes);
    }
#else
    // A run of whole output words, each assembled from gathered elements; in the tensor's
    // last word the lanes past its end keep their bits.
    uint first = item * RUN_LENGTH;
    uint end = min(first + RUN_LENGTH, params.element_count);
    uvec3 offsets = element_offsets(first);
    for (uint word_first = first; word_first < end; word_first += ELEMENTS_PER_WORD) {
        uint lanes = min(ELEMENTS_PER_WORD, end - word_first);
        uint out_word = (params.output0 + word_first) / ELEMENTS_PER_WORD;
        uint result = lanes < ELEMENTS_PER_WORD ? output0[out_word] : 0u;
        [[unroll]] for (uint lane = 0u; lane < ELEMENTS_PER_WORD; ++lane) {
            uint e = word_first + lane;
            if (lane < lanes) {
                if (e > first) offsets = next_offsets(offsets, e);
                result = with_lane_bits(result, lane, apply_at(offsets));
            }
        }
        output0[out_word] = result;
    }
#endif
}
