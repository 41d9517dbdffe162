#version 450
// The random kernel family: Philox 4x32-10 (Salmon, Moraes, Dror and Shaw, "Parallel random
// numbers: as easy as 1, 2, 3", SC11), as RANDOM_GENERATOR runs it. The input state is six
// UINT32: a 128-bit counter (elements 0 to 3, element 0 its least significant word) and a
// 64-bit key (elements 4 and 5). Invocation j encrypts counter + j (128-bit addition, carries
// across the words) under the key in 10 rounds and writes the block's four words to output
// elements 4j to 4j + 3, in the output's logical (row-major) order; words past the last
// element are dropped. Invocation 0 also writes the output state, where there is one: the
// counter plus BLOCK_COUNT (ceil(elements / 4)), the key as it was.
//
// Generated header: kernel_interface.glsl (bindings, input_load, output_store, params).
// Bases: params.base[0] the input state's first element, base[1] the output's, base[2] the
// output state's (OUTPUT_STATE defined).
//
// Defines: DTYPE_UINT32 and ELEMENT_BITS (32), WORKGROUP_SIZE, ELEMENT_COUNT, BLOCK_COUNT,
// STATE_STRIDES (input state's, output state's: the stride of their last dimension),
// OUTPUT_RANK, OUTPUT_SIZES, OUTPUT_STRIDES (the output's merged dims), OUTPUT_STATE.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require

#include "tensor_storage.glsl"

layout(local_size_x = WORKGROUP_SIZE) in;

#include "kernel_interface.glsl"

const uint STATE_STRIDES_[2] = uint[2](STATE_STRIDES);
const uint OUTPUT_SIZES_[OUTPUT_RANK] = uint[OUTPUT_RANK](OUTPUT_SIZES);
const uint OUTPUT_STRIDES_[OUTPUT_RANK] = uint[OUTPUT_RANK](OUTPUT_STRIDES);

// Philox's multipliers and Weyl key increments (Random123's PHILOX_M4x32_* and PHILOX_W32_*).
const uint M0 = 0xD2511F53u, M1 = 0xCD9E8D57u;
const uint W0 = 0x9E3779B9u, W1 = 0xBB67AE85u;

uvec4 philox_round(uvec4 counter, uvec2 key) {
    uint hi0, lo0, hi1, lo1;
    umulExtended(M0, counter.x, hi0, lo0);
    umulExtended(M1, counter.z, hi1, lo1);
    return uvec4(hi1 ^ counter.y ^ key.x, lo1, hi0 ^ counter.w ^ key.y, lo0);
}

uvec4 philox4x32_10(uvec4 counter, uvec2 key) {
    [[unroll]] for (int round = 0; round < 10; ++round) {
        if (round > 0) key += uvec2(W0, W1);
        counter = philox_round(counter, key);
    }
    return counter;
}

// counter + j, carrying from word x (least significant) to word w.
uvec4 advanced(uvec4 counter, uint j) {
    uint carry;
    counter.x = uaddCarry(counter.x, j, carry);
    counter.y = uaddCarry(counter.y, carry, carry);
    counter.z = uaddCarry(counter.z, carry, carry);
    counter.w = counter.w + carry;
    return counter;
}

uint output_offset(uint index) {
    uint at = params.base[1];
    [[unroll]] for (int d = OUTPUT_RANK - 1; d >= 0; --d) {
        at += (index % OUTPUT_SIZES_[d]) * OUTPUT_STRIDES_[d];
        index /= OUTPUT_SIZES_[d];
    }
    return at;
}

void main() {
    uint block = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * WORKGROUP_SIZE + gl_LocalInvocationID.x;
    if (block >= BLOCK_COUNT) return;
    uint state[6];
    [[unroll]] for (uint k = 0u; k < 6u; ++k) state[k] = input_load(0u, params.base[0] + k * STATE_STRIDES_[0]);
    uvec4 counter = uvec4(state[0], state[1], state[2], state[3]);
    uvec2 key = uvec2(state[4], state[5]);
    uvec4 words = philox4x32_10(advanced(counter, block), key);
    [[unroll]] for (uint w = 0u; w < 4u; ++w) {
        uint index = block * 4u + w;
        if (index < ELEMENT_COUNT) output_store(0u, output_offset(index), words[w]);
    }
#if defined(OUTPUT_STATE)
    if (block == 0u) {
        uvec4 next = advanced(counter, BLOCK_COUNT);
        uint next_state[6] = uint[6](next.x, next.y, next.z, next.w, key.x, key.y);
        [[unroll]] for (uint k = 0u; k < 6u; ++k) output_store(1u, params.base[2] + k * STATE_STRIDES_[1], next_state[k]);
    }
#endif
}
