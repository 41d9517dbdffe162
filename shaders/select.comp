#version 450
// The selection kernel family: the K first elements of each row along one axis (TOP_K,
// TOP_K1), in a total order on their stored bits: by value, largest first (smallest first
// where SMALLEST is defined), equal values by increasing index. A NaN is above every number
// and NaNs are equal to each other; -0 equals +0. One invocation per row (the kept dims)
// selects one element after another: each is the first in the order among the elements
// after the one selected before it, so it needs no memory of the row and every device
// gives the same choice. Values are copied as they are stored; indices count from the
// row's start.
//
// lavapipe ends an invocation's loops after 65,535 iterations in all, so each stage (one
// dispatch) selects at most PER_STAGE elements; where there are several stages (STAGED) the
// scratch holds each row's last selected (key, index) and how many are written, three words
// a row at params.base[3] (four with WIDE_VALUES: the key's two words), which the first stage
// (FIRST_STAGE) does not read.
//
// WIDE_VALUES: the values are INT64 or UINT64, bound as UINT32 words, element k at words 2k
// (low) and 2k + 1 (high); a key is a uvec2 of (high, low) words, ordered high word first.
//
// Defines: DTYPE_* and ELEMENT_BITS (the values' bound type), WORKGROUP_SIZE, ROW_COUNT,
// LENGTH, K, PER_STAGE, AXIS_STRIDES and KEPT_STRIDES (per dim: input, values, indices),
// KEPT_RANK, KEPT_SIZES, VALUE_BITS, KEY_FLOAT with INFINITY_BITS, KEY_SIGNED, SMALLEST,
// STAGED, FIRST_STAGE, WIDE_VALUES, WIDE_INDICES (the indices are UINT64, bound as UINT32
// words).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require

#include "tensor_storage.glsl"

layout(local_size_x = WORKGROUP_SIZE) in;

#include "kernel_interface.glsl"
#include "wide_words.glsl"

const uint AXIS_STRIDES_[3] = uint[3](AXIS_STRIDES);
const uint KEPT_SIZES_[KEPT_RANK] = uint[KEPT_RANK](KEPT_SIZES);
const uint KEPT_STRIDES_[KEPT_RANK * 3] = uint[KEPT_RANK * 3](KEPT_STRIDES);
#if defined(WIDE_VALUES)
#define VALUE uvec2
#define KEY uvec2
#define KEY_WORDS 2u

VALUE value_load(uint at) { return input_words(0u, at); }

void value_store(uint at, VALUE bits) { output_words(0u, at, bits); }

// A key whose order (high word first, unsigned) is the selection's order of values.
KEY order_key(VALUE bits) {
#if defined(KEY_SIGNED)
    KEY key = uvec2(bits.y ^ 0x80000000u, bits.x);
#else
    KEY key = uvec2(bits.y, bits.x);
#endif
#if defined(SMALLEST)
    return ~key;
#else
    return key;
#endif
}

bool key_above(KEY a, KEY b) {
    return a.x > b.x || (a.x == b.x && a.y > b.y);
}
#else
#define VALUE uint
#define KEY uint
#define KEY_WORDS 1u
const uint SIGN_BIT = 1u << (VALUE_BITS - 1u);

VALUE value_load(uint at) { return input_load(0u, at); }

void value_store(uint at, VALUE bits) { output_store(0u, at, bits); }

bool key_above(KEY a, KEY b) { return a > b; }


// A key whose unsigned order is the selection's order of values (largest key first).
KEY order_key(VALUE bits) {
#if defined(KEY_FLOAT)
    uint magnitude = bits & (SIGN_BIT - 1u);
    uint key;
    if (magnitude > INFINITY_BITS) key = 0xFFFFFFFFu;        // NaN: above everything
    else if (magnitude == 0u) key = SIGN_BIT;                 // -0 and +0 alike
    else if ((bits & SIGN_BIT) != 0u) key = SIGN_BIT - magnitude;
    else key = SIGN_BIT + magnitude;
#elif defined(KEY_SIGNED)
    uint key = bits ^ SIGN_BIT;
#else
    uint key = bits;
#endif
#if defined(SMALLEST)
    return ~key;
#else
    return key;
#endif
}
#endif

void main() {
    uint row = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * WORKGROUP_SIZE + gl_LocalInvocationID.x;
    if (row >= ROW_COUNT) return;
    uint at[3] = uint[3](params.base[0], params.base[1], params.base[2]);
    uint rest = row;
    [[unroll]] for (int d = KEPT_RANK - 1; d >= 0; --d) {
        uint index = rest % KEPT_SIZES_[d];
        [[unroll]] for (uint t = 0u; t < 3u; ++t) at[t] += index * KEPT_STRIDES_[d * 3 + t];
        rest /= KEPT_SIZES_[d];
    }
    // The element selected last, as (key, index): the next is the best strictly after it.
#if defined(STAGED)
    uint carried_at = params.base[3] + (KEY_WORDS + 2u) * row;  // the key, the index, the count
#endif
#if defined(FIRST_STAGE) || !defined(STAGED)
    KEY last_key = KEY(0xFFFFFFFFu);
    uint last_index = 0xFFFFFFFFu, position = 0u;
    bool first = true;
#else
#if defined(WIDE_VALUES)
    KEY last_key = uvec2(scratch[carried_at], scratch[carried_at + 1u]);
#else
    KEY last_key = scratch[carried_at];
#endif
    uint last_index = scratch[carried_at + KEY_WORDS], position = scratch[carried_at + KEY_WORDS + 1u];
    bool first = false;
#endif
    for (uint j = position; j < min(K, position + PER_STAGE); ++j) {
        KEY best_key = KEY(0u);
        uint best_index = 0xFFFFFFFFu;
        VALUE best_bits = VALUE(0u);
        for (uint i = 0u; i < LENGTH; ++i) {
            VALUE bits = value_load(at[0] + i * AXIS_STRIDES_[0]);
            KEY key = order_key(bits);
            bool after = first || key_above(last_key, key) || (key == last_key && i > last_index);
            if (after && (best_index == 0xFFFFFFFFu || key_above(key, best_key))) {
                best_key = key;
                best_index = i;
                best_bits = bits;
            }
        }
        value_store(at[1] + j * AXIS_STRIDES_[1], best_bits);
#if defined(WIDE_INDICES)
        // a UINT64 index: the index zero-extended
        output_words(1u, at[2] + j * AXIS_STRIDES_[2], uvec2(best_index, 0u));
#else
        output_store(1u, at[2] + j * AXIS_STRIDES_[2], best_index);
#endif
        last_key = best_key;
        last_index = best_index;
        first = false;
    }
#if defined(STAGED)
#if defined(WIDE_VALUES)
    scratch[carried_at] = last_key.x;
    scratch[carried_at + 1u] = last_key.y;
#else
    scratch[carried_at] = last_key;
#endif
    scratch[carried_at + KEY_WORDS] = last_index;
    scratch[carried_at + KEY_WORDS + 1u] = min(K, position + PER_STAGE);
#endif
}
