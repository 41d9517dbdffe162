#version 450
// The scan kernel family: running sums and products along one axis (CUMULATIVE_SUMMATION,
// CUMULATIVE_PRODUCT). One invocation per row (the kept dims, ROW_COUNT rows) walks its
// LENGTH elements in order, backwards where REVERSE is defined, and writes the running value
// at each: after its element joins (inclusive), or before (EXCLUSIVE: SCAN_IDENTITY first,
// +0 or 1). Each result is the
// plain left-to-right running value, so the bits depend only on the values, never on the
// workgroup size or the device. An output bound over its input is safe: each element is
// read before it is written, by the one invocation that owns its row.
//
// Generated headers: kernel_interface.glsl (bindings, input_load, output_store, params) and
// scan_body.glsl (dmlpy/kernels/scan.py): SCAN_VALUE, SCAN_IDENTITY, scan_value(bits),
// scan_combine(a, b), scan_stored(value), scan_carry(value) and scan_carried(bits).
//
// WIDE_ELEMENTS: the tensors are 64-bit (INT64, UINT64), bound as 32-bit words, element k at
// words 2k (low) and 2k + 1 (high); the bits an element moves are a uvec2, and so is a carry.
//
// lavapipe ends an invocation's loops after 65,535 iterations in all, so a row is walked in
// stages of at most 4,096 elements (positions WALK_FIRST to WALK_END of the walk), one dispatch
// each, the running value carried between them in the scratch (CARRY_IN, CARRY_OUT: one word
// a row, two with WIDE_ELEMENTS, at params.base[2]).
//
// Where both rows lie in whole aligned blocks of eight 16- or 32-bit elements (BLOCKS: the
// axis contiguous, LENGTH and every other step multiples of a block) and this dispatch's bases
// are aligned, a block is read and written as one or two 16-byte vectors, its eight
// elements walked in registers in the same order.
//
// Defines: DTYPE_* and ELEMENT_BITS (the output's), WORKGROUP_SIZE, ROW_COUNT, LENGTH,
// AXIS_STRIDES (input's, output's), KEPT_RANK, KEPT_SIZES, KEPT_STRIDES (per dim: input's,
// output's), REVERSE, EXCLUSIVE, WALK_FIRST, WALK_END, CARRY_IN, CARRY_OUT, BLOCKS,
// VECTOR_WORDS_64 (kernel_interface.glsl), WIDE_ELEMENTS.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#if defined(VECTOR_WORDS_64)
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#endif
#include "float_controls.glsl"

#include "tensor_storage.glsl"
#include "numeric.glsl"

layout(local_size_x = WORKGROUP_SIZE) in;

#include "kernel_interface.glsl"

#if defined(WIDE_ELEMENTS)
#define SCAN_BITS uvec2
#define CARRY_WORDS 2u
#include "wide_words.glsl"
SCAN_BITS scan_load(uint at) { return input_words(0u, at); }
void scan_store(uint at, SCAN_BITS bits) { output_words(0u, at, bits); }
#else
#define SCAN_BITS uint
#define CARRY_WORDS 1u
SCAN_BITS scan_load(uint at) { return input_load(0u, at); }
void scan_store(uint at, SCAN_BITS bits) { output_store(0u, at, bits); }
#endif

#include "scan_body.glsl"

const uint AXIS_STRIDES_[2] = uint[2](AXIS_STRIDES);
const uint KEPT_SIZES_[KEPT_RANK] = uint[KEPT_RANK](KEPT_SIZES);
const uint KEPT_STRIDES_[KEPT_RANK * 2] = uint[KEPT_RANK * 2](KEPT_STRIDES);

// Element i of the walk joins the running value; its result is what the output stores there.
SCAN_BITS walk_element(uint k, SCAN_BITS bits, inout SCAN_VALUE running) {
    SCAN_VALUE value = scan_value(bits);
#if defined(EXCLUSIVE)
    SCAN_BITS stored = scan_stored(running);
#endif
    // The first element starts the running value (no identity added: -0 stays -0).
    running = k == 0u ? value : scan_combine(running, value);
#if !defined(EXCLUSIVE)
    SCAN_BITS stored = scan_stored(running);
#endif
    return stored;
}

// Position k of the walk: its element's index along the axis.
uint walked_index(uint k) {
#if defined(REVERSE)
    return LENGTH - 1u - k;
#else
    return k;
#endif
}

void walk_elements(uint source_at, uint target_at, inout SCAN_VALUE running) {
    for (uint k = WALK_FIRST; k < WALK_END; ++k) {
        uint i = walked_index(k);
        scan_store(target_at + i * AXIS_STRIDES_[1], walk_element(k, scan_load(source_at + i * AXIS_STRIDES_[0]), running));
    }
}

#if defined(BLOCKS)
#include "row_blocks.glsl"

void walk_blocks(uint source_at, uint target_at, inout SCAN_VALUE running) {
    for (uint k = WALK_FIRST; k < WALK_END; k += 8u) {
        uint first = min(walked_index(k), walked_index(k + 7u));  // the block's lowest index
        uint words[8], elements[8];
        load_block(0u, source_at + first, words);
        [[unroll]] for (uint j = 0u; j < 8u; ++j) {
            uint at = walked_index(k + j) - first;
            elements[at] = walk_element(k + j, block_element(0u, words, at), running);
        }
        store_block(0u, target_at + first, elements);
    }
}
#endif

void main() {
    uint row = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * WORKGROUP_SIZE + gl_LocalInvocationID.x;
    if (row >= ROW_COUNT) return;
    uint source_at = params.base[0], target_at = params.base[1];
    uint rest = row;
    [[unroll]] for (int d = KEPT_RANK - 1; d >= 0; --d) {
        uint index = rest % KEPT_SIZES_[d];
        source_at += index * KEPT_STRIDES_[d * 2];
        target_at += index * KEPT_STRIDES_[d * 2 + 1];
        rest /= KEPT_SIZES_[d];
    }
#if defined(CARRY_IN)
    uint carry_at = params.base[2] + CARRY_WORDS * row;
#if defined(WIDE_ELEMENTS)
    SCAN_VALUE running = scan_carried(uvec2(scratch[carry_at], scratch[carry_at + 1u]));
#else
    SCAN_VALUE running = scan_carried(scratch[carry_at]);
#endif
#else
    SCAN_VALUE running = SCAN_IDENTITY;
#endif
#if defined(BLOCKS)
    // Decided once, out here: the bases are this dispatch's (the planner checked the strides).
    if (params.base[0] % block_load_elements(ELEMENT_BITS) == 0u && params.base[1] % block_load_elements(ELEMENT_BITS) == 0u)
        walk_blocks(source_at, target_at, running);
    else
        walk_elements(source_at, target_at, running);
#else
    walk_elements(source_at, target_at, running);
#endif
#if defined(CARRY_OUT)
    SCAN_BITS carried = scan_carry(running);
#if defined(WIDE_ELEMENTS)
    scratch[params.base[2] + 2u * row] = carried.x;
    scratch[params.base[2] + 2u * row + 1u] = carried.y;
#else
    scratch[params.base[2] + row] = carried;
#endif
#endif
}
