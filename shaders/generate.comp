#version 450
// The generation kernel family: outputs made from their element index (FILL_VALUE_CONSTANT,
// FILL_VALUE_SEQUENCE) or from an index tensor (ONE_HOT). One invocation per output element:
// its row-major index e over OUT_SIZES gives its place through OUT_STRIDES; the shader fills
// the operands and generate_element (generate_body.glsl, rendered from the IR by
// dmlpy/kernels/generation.py) gives the bits stored there.
//
// Operands: FLOAT_INDEX: bits[0] = e as FP32 bits (the expression takes start and delta from
// the scalars). INTEGER_SEQUENCE: bits[0] = (start + e * delta) modulo 2^32, both pushed as
// integer bits, masked to the element (two's complement wrap-around). INDEX_ROWS (ONE_HOT): bits[0] = 1 where
// the row's index (counted from the end where SIGNED_INDICES and negative) is this element's
// position along AXIS, else 0; bits[1] the values' on element (ON_OFFSET), bits[2] its first.
//
// Generated headers: kernel_interface.glsl (bindings, output_store, params) and
// generate_body.glsl (OPERANDS, generate_element).
//
// A 64-bit tensor is bound as 32-bit words (its element k at words 2k, low, and 2k + 1): the
// output under WIDE_SEQUENCE (start + e * delta modulo 2^64, FLOAT64's constant bits with delta
// 0), the indices under WIDE_INDICES, the values and the output under WIDE_VALUES (ONE_HOT
// copies the chosen value's two words).
//
// Defines: DTYPE_* and ELEMENT_BITS (the output's, UINT32 for 64 bits), WORKGROUP_SIZE,
// ELEMENT_COUNT, OUT_RANK, OUT_SIZES, OUT_STRIDES; FLOAT_INDEX, INTEGER_SEQUENCE or
// WIDE_SEQUENCE; or INDEX_ROWS with AXIS, AXIS_SIZE, INDEX_STRIDES (0 along AXIS), ON_OFFSET,
// SIGNED_INDICES, WIDE_INDICES and WIDE_VALUES.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "float_controls.glsl"

#include "tensor_storage.glsl"
#include "numeric.glsl"

layout(local_size_x = WORKGROUP_SIZE) in;

#include "kernel_interface.glsl"
#include "wide_words.glsl"
#include "generate_body.glsl"

const uint OUT_SIZES_[OUT_RANK] = uint[OUT_RANK](OUT_SIZES);
const uint OUT_STRIDES_[OUT_RANK] = uint[OUT_RANK](OUT_STRIDES);
#if defined(INDEX_ROWS)
const uint INDEX_STRIDES_[OUT_RANK] = uint[OUT_RANK](INDEX_STRIDES);
#endif

void main() {
    uint e = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * WORKGROUP_SIZE + gl_LocalInvocationID.x;
    if (e >= ELEMENT_COUNT) return;
#if defined(INDEX_ROWS)
    const uint output_binding = 2u;
    uint index_at = params.base[0];
    uint position = 0u;
#else
    const uint output_binding = 0u;
#endif
    uint out_at = params.base[output_binding];
    uint rest = e;
    [[unroll]] for (int d = OUT_RANK - 1; d >= 0; --d) {
        uint coordinate = rest % OUT_SIZES_[d];
        out_at += coordinate * OUT_STRIDES_[d];
#if defined(INDEX_ROWS)
        index_at += coordinate * INDEX_STRIDES_[d];
        if (d == AXIS) position = coordinate;
#endif
        rest /= OUT_SIZES_[d];
    }
#if defined(INDEX_ROWS) && defined(WIDE_INDICES)
    // A 64-bit index: words low and high. Signed and negative (high all ones): on where
    // index + AXIS_SIZE, in [0, AXIS_SIZE), is the position.
    uvec2 index = input_words(0u, index_at);
    uint low = index.x, high = index.y;
    bool hit = high == 0u && low == position;
#if defined(SIGNED_INDICES)
    hit = hit || (high == 0xFFFFFFFFu && low >= 0u - AXIS_SIZE && low + AXIS_SIZE == position);
#endif
#elif defined(INDEX_ROWS)
    uint raw = input_load(0u, index_at);
#if defined(SIGNED_INDICES)
    int index = int(raw);
    if (index < 0) index += int(AXIS_SIZE);  // still negative: past the start, no element is on
    bool hit = index >= 0 && uint(index) == position;
#else
    bool hit = raw == position;  // at or past AXIS_SIZE: no element is on
#endif
#endif
#if defined(INDEX_ROWS) && defined(WIDE_VALUES)
    uint chosen = params.base[1] + (hit ? ON_OFFSET : 0u);
    output_words(0u, out_at, input_words(1u, chosen));
#elif defined(INDEX_ROWS)
    uint bits[OPERANDS] = uint[OPERANDS](hit ? 1u : 0u, input_load(1u, params.base[1] + ON_OFFSET),
                                         input_load(1u, params.base[1]));
#elif defined(WIDE_SEQUENCE)
    // (start + e * delta) modulo 2^64 on words: start at scalars 0 (low) and 1, delta at 2 and 3.
    uint product_high, product_low, carry;
    umulExtended(e, params.scalar_bits[2], product_high, product_low);
    product_high += e * params.scalar_bits[3];
    uint low = uaddCarry(params.scalar_bits[0], product_low, carry);
    output_words(0u, out_at, uvec2(low, params.scalar_bits[1] + product_high + carry));
#elif defined(INTEGER_SEQUENCE)
    uint bits[OPERANDS] = uint[OPERANDS]((params.scalar_bits[0] + e * params.scalar_bits[1]) & ELEMENT_MASK);
#else
    uint bits[OPERANDS] = uint[OPERANDS](floatBitsToUint(float(e)));
#endif
#if !defined(WIDE_SEQUENCE) && !(defined(INDEX_ROWS) && defined(WIDE_VALUES))
    output_store(0u, out_at, generate_element(bits));
#endif
}
