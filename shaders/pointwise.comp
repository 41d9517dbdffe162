#version 450
// The point-wise kernel family: several outputs of one shape and data type, each computed
// from the inputs' elements at its index (an optimizer's update of parameters and moments).
// pointwise_outputs (the generated header pointwise_body.glsl, rendered from the outputs'
// expressions by dmlpy/kernels/pointwise.py) maps the inputs' stored bits to every output's
// stored bits in one SSA body. An invocation maps RUN_LENGTH consecutive elements (row-major
// over SIZES); for each it loads every input, then stores every output, so an output bound in
// place over an input of the same layout reads each element before overwriting it.
//
// PACKED: every tensor dense in one row-major layout and of ELEMENT_BITS elements, but the
// inputs INPUT_UNIFORM(t) marks (one element each, read once an invocation); an invocation maps
// VECTORS_PER_ITEM 16-byte vectors of each tensor (the element count is whole vectors).
// Otherwise an invocation maps RUN_LENGTH elements, each found through the strides.
//
// Generated headers: kernel_interface.glsl (bindings, input_load, input_vector,
// output_store, output_vector_store, params) and pointwise_body.glsl.
//
// Defines: DTYPE_* and ELEMENT_BITS (the outputs'), WORKGROUP_SIZE, the float-control defines,
// USES_* for dmlpy's functions; PACKED with VECTORS_PER_ITEM and INPUT_UNIFORM(t) (1 or 0 per
// input), or RUN_LENGTH, RANK, SIZES and STRIDES (RANK groups of TENSOR_COUNT element
// strides: inputs, then outputs; 0 where an input broadcasts).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#if defined(VECTOR_WORDS_64)
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#endif
#include "float_controls.glsl"

#include "tensor_storage.glsl"
#include "numeric.glsl"
#ifdef USES_TRANSCENDENTALS
#include "transcendental.glsl"
#endif

layout(local_size_x = WORKGROUP_SIZE) in;

#include "kernel_interface.glsl"
#include "pointwise_body.glsl"

#if defined(PACKED)
#define VECTOR_ELEMENTS (4u * ELEMENTS_PER_WORD)

void main() {
    uint item = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * WORKGROUP_SIZE + gl_LocalInvocationID.x;
    uint vectors = params.element_count / VECTOR_ELEMENTS;
    if (item * VECTORS_PER_ITEM >= vectors) return;
    uint once[INPUT_COUNT];
    [[unroll]] for (uint t = 0u; t < INPUT_COUNT; ++t) once[t] = INPUT_UNIFORM(t) != 0u ? input_load(t, params.base[t]) : 0u;
    for (uint v = item * VECTORS_PER_ITEM; v < min((item + 1u) * VECTORS_PER_ITEM, vectors); ++v) {
        uvec4 loaded[INPUT_COUNT];
        [[unroll]] for (uint t = 0u; t < INPUT_COUNT; ++t)
            loaded[t] = INPUT_UNIFORM(t) != 0u ? uvec4(0u) : input_vector(t, params.base[t] / VECTOR_ELEMENTS + v);
        uvec4 stored[OUTPUT_COUNT];
        [[unroll]] for (uint w = 0u; w < 4u; ++w) {
            uint words[OUTPUT_COUNT];
            [[unroll]] for (uint lane = 0u; lane < ELEMENTS_PER_WORD; ++lane) {
                uint bits[INPUT_COUNT];
                [[unroll]] for (uint t = 0u; t < INPUT_COUNT; ++t)
                    bits[t] = INPUT_UNIFORM(t) != 0u ? once[t] : lane_bits(loaded[t][w], lane);
                uint results[OUTPUT_COUNT];
                pointwise_outputs(bits, results);
                [[unroll]] for (uint o = 0u; o < OUTPUT_COUNT; ++o)
                    words[o] = with_lane_bits(lane == 0u ? 0u : words[o], lane, results[o]);
            }
            [[unroll]] for (uint o = 0u; o < OUTPUT_COUNT; ++o) stored[o][w] = words[o];
        }
        [[unroll]] for (uint o = 0u; o < OUTPUT_COUNT; ++o)
            output_vector_store(o, params.base[INPUT_COUNT + o] / VECTOR_ELEMENTS + v, stored[o]);
    }
}
#else
const uint TENSOR_SIZES[RANK] = uint[RANK](SIZES);
const uint TENSOR_STRIDES[RANK * TENSOR_COUNT] = uint[RANK * TENSOR_COUNT](STRIDES);

void element_offsets(uint e, out uint offsets[TENSOR_COUNT]) {
    [[unroll]] for (uint t = 0u; t < TENSOR_COUNT; ++t) offsets[t] = params.base[t];
    [[unroll]] for (int d = RANK - 1; d >= 0; --d) {
        uint index = e % TENSOR_SIZES[d];
        [[unroll]] for (uint t = 0u; t < TENSOR_COUNT; ++t) offsets[t] += index * TENSOR_STRIDES[d * TENSOR_COUNT + t];
        e /= TENSOR_SIZES[d];
    }
}

void main() {
    uint item = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * WORKGROUP_SIZE + gl_LocalInvocationID.x;
    uint first = item * RUN_LENGTH;
    if (first >= params.element_count) return;
    uint end = min(first + RUN_LENGTH, params.element_count);
    for (uint e = first; e < end; ++e) {
        uint offsets[TENSOR_COUNT];
        element_offsets(e, offsets);
        uint bits[INPUT_COUNT];
        [[unroll]] for (uint t = 0u; t < INPUT_COUNT; ++t) bits[t] = input_load(t, offsets[t]);
        uint results[OUTPUT_COUNT];
        pointwise_outputs(bits, results);
        [[unroll]] for (uint o = 0u; o < OUTPUT_COUNT; ++o) output_store(o, offsets[INPUT_COUNT + o], results[o]);
    }
}
#endif
