#version 450
// The 64-bit kernel family: element-wise work where a tensor is FLOAT64, INT64 or UINT64, one
// element an invocation, in 32-bit integer arithmetic alone (no device needs shaderFloat64 or
// shaderInt64, and no device's float controls touch the result). A 64-bit tensor is bound as
// 32-bit words, element k at words 2k (low) and 2k + 1 (high); a narrower one as its own data
// type. One of:
//   CONVERT     output = input 0 converted to the output's type (CAST, IDENTITY);
//   ARITHMETIC  output = the operator's integer or bit math (the generated operator_body.glsl,
//               rendered from its expression by dmlpy/ir/render.py's 64-bit table), on inputs
//               of one 64-bit type (a narrower input, IF's condition, zero-extended): every
//               stored value and integer a uvec2 of (low, high) words. Integers are INT64
//               (VALUES_SIGNED) or UINT64 values using all 64 bits: add, subtract and multiply
//               wrap modulo 2^64; comparisons are exact, two's complement or unsigned, word by
//               word (no FP64 compare to tie 2^53 + 1 with 2^53), and so are those with FP32
//               numbers (scalars, constants); division truncates toward zero (by zero: 0); a
//               condition stores as 1 or 0; a select passes the chosen element's words as they are.
//
// CONVERT passes every value through one exact form: a sign and a magnitude m * 2^q (m up to 64
// bits, held as a uvec2 of low and high words), or an infinity, or a NaN. A float decodes
// exactly; an integer is m with q = 0. Then:
//   to a float type:                 m * 2^q rounded once to nearest even, to a subnormal or
//                                    zero where it is small, to infinity where it overflows;
//                                    a NaN keeps its sign and the top of its payload, quieted;
//   to an integer type, from a float: truncated toward zero and saturated to the type's
//                                    range, a NaN 0;
//   to an integer type, from one:    the low bits of the target's width (two's complement).
//
// Defines: WORKGROUP_SIZE, ELEMENT_COUNT, RANK, SIZES, STRIDES (RANK groups of one element
// stride per tensor: inputs, then the output), PACKED where every tensor is packed row-major
// (element e of each at its base + e, e below params.element_count: the dispatch may run in
// windows of elements), with PACKED_VECTORS where every tensor is also 64- or 32-bit and
// starts on 16 bytes, as every window does: an invocation maps ITEM_ELEMENTS elements of each
// tensor in whole 16-byte vectors (two elements a vector of a 64-bit tensor, four of a 32-bit
// one) over the window's whole items, and the elements past them run in a second dispatch
// (PACKED_TAIL), one an invocation; WIDE_TENSORS (bit t: tensor t is 64-bit),
// ELEMENT_BITS and DTYPE_* (the output's bound type); one of CONVERT, ARITHMETIC; for CONVERT,
// SOURCE_BITS with SOURCE_FLOAT (and SOURCE_EXPONENT_BITS, SOURCE_MANTISSA_BITS) or
// SOURCE_SIGNED (else unsigned), input 0's type, TARGET_BITS with TARGET_FLOAT (and
// TARGET_EXPONENT_BITS, TARGET_MANTISSA_BITS) or TARGET_SIGNED (else unsigned), and SAME_TYPE
// where the two types are one; for ARITHMETIC, VALUES_SIGNED where the integers are INT64.
//
// ROWS (with ARITHMETIC): a reduction along rows of integers of one 64-bit type (REDUCE,
// ARGMIN, ARGMAX on INT64 or UINT64), its term the generated wide_math. The domain splits into
// kept dims (ROW_COUNT rows) and reduced dims (REDUCED_COUNT elements a row, in increasing
// index order), the row's reduced indices 0 in the output. Sums and products wrap modulo 2^64
// and extremes compare exactly, so the result does not depend on the order of combination:
//   STAGE_PARTIAL  one invocation per (chunk of CHUNK elements, row) folds its chunk in order;
//                  where a row is one chunk it writes the output, else (WRITES_PARTIALS) its
//                  partial in the scratch (three words: the value's two, then its index),
//                  chunk-major;
//   STAGE_TOTAL    one invocation per row folds the row's CHUNK_COUNT partials in order.
// One of COMBINE_SUM, COMBINE_PRODUCT, COMBINE_LARGEST, COMBINE_SMALLEST (the first extreme,
// the last with TIES_LAST), and WRITE_INDEX where the output is the extreme's index over the
// reduced dims (zero-extended where the output is 64-bit). Defines: KEPT_RANK, KEPT_SIZES,
// KEPT_STRIDES, REDUCED_RANK, REDUCED_SIZES, REDUCED_STRIDES (per dim, one element stride per
// tensor: inputs, then the output), ROW_COUNT, REDUCED_COUNT, CHUNK, CHUNK_COUNT.
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
#include "wide_words.glsl"

#if !defined(ROWS)
const uint SIZES_[RANK] = uint[RANK](SIZES);
const uint STRIDES_[RANK * TENSOR_COUNT] = uint[RANK * TENSOR_COUNT](STRIDES);
#endif

// --- 64-bit unsigned words (x low, y high) -------------------------------------------------

uvec2 shifted_left(uvec2 v, uint s) {  // s < 64
    if (s == 0u) return v;
    if (s >= 32u) return uvec2(0u, v.x << (s - 32u));
    return uvec2(v.x << s, (v.y << s) | (v.x >> (32u - s)));
}

uvec2 shifted_right(uvec2 v, uint s) {  // s < 64
    if (s == 0u) return v;
    if (s >= 32u) return uvec2(v.y >> (s - 32u), 0u);
    return uvec2((v.x >> s) | (v.y << (32u - s)), v.y >> s);
}

uvec2 low_bits(uint width) {  // 2^width - 1, width <= 64
    return width >= 64u ? uvec2(0xFFFFFFFFu) : dml_wide_sub(shifted_left(uvec2(1u, 0u), width), uvec2(1u, 0u));
}

bool below(uvec2 a, uvec2 b) {  // unsigned a < b
    return a.y < b.y || (a.y == b.y && a.x < b.x);
}

int top_bit(uvec2 v) {  // -1 for 0
    return v.y != 0u ? 32 + findMSB(v.y) : findMSB(v.x);
}

// m / 2^s rounded to nearest, ties to even (s >= 1; past 64 every m < 2^64 is under half).
uvec2 rounded_right(uvec2 m, uint s) {
    if (s > 64u) return uvec2(0u);
    if (s == 64u) return uvec2(below(uvec2(0u, 0x80000000u), m) ? 1u : 0u, 0u);
    uvec2 kept = shifted_right(m, s);
    uvec2 dropped = m & low_bits(s), halfway = shifted_left(uvec2(1u, 0u), s - 1u);
    if (below(halfway, dropped) || (dropped == halfway && (kept.x & 1u) != 0u)) kept = dml_wide_add(kept, uvec2(1u, 0u));
    return kept;
}

#if defined(ARITHMETIC)
// --- 64-bit integers: one type, INT64 (VALUES_SIGNED) or UINT64 -----------------------------

bool negative64(uvec2 a) {
#if defined(VALUES_SIGNED)
    return int(a.y) < 0;
#else
    return false;
#endif
}

bool less64(uvec2 a, uvec2 b) {
#if defined(VALUES_SIGNED)
    return dml_wide_less(a, b);
#else
    return below(a, b);
#endif
}

uvec2 magnitude64(uvec2 a) {  // |INT64_MIN| = 2^63 fits unsigned
    return negative64(a) ? dml_wide_negated(a) : a;
}

// n / d of unsigned values (d != 0), and n % d, by shift and subtract, a bit a step. Before
// each shift the remainder is at most n's bits above the current one (below 2^63): no bit is lost.
uvec2 unsigned_divided(uvec2 n, uvec2 d, out uvec2 remainder) {
    uvec2 quotient = uvec2(0u);
    remainder = uvec2(0u);
    for (int bit = top_bit(n); bit >= 0; --bit) {
        remainder = shifted_left(remainder, 1u) | uvec2(shifted_right(n, uint(bit)).x & 1u, 0u);
        quotient = shifted_left(quotient, 1u);
        if (!below(remainder, d)) {
            remainder = dml_wide_sub(remainder, d);
            quotient.x |= 1u;
        }
    }
    return quotient;
}

// The quotient truncated toward zero (INT64_MIN / -1 wraps to itself); by zero, 0.
uvec2 divided64(uvec2 a, uvec2 b) {
    if (b == uvec2(0u)) return uvec2(0u);
    uvec2 remainder;
    uvec2 quotient = unsigned_divided(magnitude64(a), magnitude64(b), remainder);
    return negative64(a) != negative64(b) ? dml_wide_negated(quotient) : quotient;
}

// The remainder with the dividend's sign (C's), or with the divisor's where `floored`
// (Python's); by zero, 0.
uvec2 remainder64(uvec2 a, uvec2 b, bool floored) {
    if (b == uvec2(0u)) return uvec2(0u);
    uvec2 remainder;
    unsigned_divided(magnitude64(a), magnitude64(b), remainder);
    if (negative64(a)) remainder = dml_wide_negated(remainder);
    if (floored && remainder != uvec2(0u) && negative64(remainder) != negative64(b)) {
        remainder = dml_wide_add(remainder, b);
    }
    return remainder;
}

// An FP32 number (not NaN) decoded exactly: its sign, its integer part (2^64 - 1 with `huge`
// where the number is 2^64 or more, infinity included) and whether a fraction remains.
struct Fp32Parts {
    bool negative;
    uvec2 whole;
    bool fractional;
    bool huge;
};

Fp32Parts fp32_parts(uint f) {
    Fp32Parts parts = Fp32Parts((f >> 31) != 0u, uvec2(0u), false, false);
    uint biased = (f >> 23) & 0xFFu;
    if (biased >= 191u) {
        parts.whole = uvec2(0xFFFFFFFFu);
        parts.huge = true;
        return parts;
    }
    uint significand = (f & 0x7FFFFFu) | (biased != 0u ? 0x800000u : 0u);
    int shift = int(max(biased, 1u)) - 150;  // the number is significand * 2^shift, shift <= 40
    if (shift >= 0) {
        parts.whole = shifted_left(uvec2(significand, 0u), uint(shift));
    } else if (shift > -24) {
        parts.whole = uvec2(significand >> uint(-shift), 0u);
        parts.fractional = (significand & ((1u << uint(-shift)) - 1u)) != 0u;
    } else {
        parts.fractional = significand != 0u;
    }
    return parts;
}

bool fp32_is_nan(uint f) {
    return (f & 0x7FFFFFFFu) > 0x7F800000u;
}

// x against the FP32 number with bits f, exactly: -1 below, 0 equal, 1 above, 2 unordered (NaN).
int order_against_fp32(uvec2 x, uint f) {
    if (fp32_is_nan(f)) return 2;
    Fp32Parts parts = fp32_parts(f);
    bool x_negative = negative64(x);
    uvec2 x_magnitude = magnitude64(x);
    if (x_magnitude == uvec2(0u) && parts.whole == uvec2(0u) && !parts.fractional && !parts.huge) return 0;  // +-0
    if (x_negative != parts.negative) return x_negative ? -1 : 1;
    int by_magnitude = parts.huge || below(x_magnitude, parts.whole) ? -1
                     : below(parts.whole, x_magnitude) ? 1 : parts.fractional ? -1 : 0;
    return x_negative ? -by_magnitude : by_magnitude;
}

// An FP32 number as the integer type: truncated toward zero, saturated to the range (NaN: 0).
uvec2 from_fp32(uint f) {
    if (fp32_is_nan(f)) return uvec2(0u);
    Fp32Parts parts = fp32_parts(f);
#if defined(VALUES_SIGNED)
    uvec2 limit = parts.negative ? uvec2(0u, 0x80000000u) : uvec2(0xFFFFFFFFu, 0x7FFFFFFFu);
    uvec2 magnitude = below(limit, parts.whole) ? limit : parts.whole;  // a huge whole is 2^64 - 1
    return parts.negative ? dml_wide_negated(magnitude) : magnitude;
#else
    return parts.negative ? uvec2(0u) : parts.whole;
#endif
}

// The operator's math: uvec2 wide_math(uvec2 words[INPUT_COUNT]).
#include "operator_body.glsl"
#endif

#if defined(CONVERT)
// --- The exact form -------------------------------------------------------------------------

#define FINITE 0u
#define INFINITE 1u
#define NOT_A_NUMBER 2u

struct Exact {
    uint kind;
    bool negative;
    uvec2 magnitude;  // FINITE: m; NOT_A_NUMBER: the payload, its top at bit 63
    int exponent;     // FINITE: q
};

Exact decoded(uvec2 bits) {
    Exact value = Exact(FINITE, false, uvec2(0u), 0);
#if defined(SOURCE_FLOAT)
    const uint M = uint(SOURCE_MANTISSA_BITS), E = uint(SOURCE_EXPONENT_BITS);
    const int BIAS = (1 << (E - 1u)) - 1;
    value.negative = (shifted_right(bits, M + E).x & 1u) != 0u;
    uint field = shifted_right(bits, M).x & ((1u << E) - 1u);
    uvec2 mantissa = bits & low_bits(M);
    if (field == (1u << E) - 1u) {
        value.kind = mantissa == uvec2(0u) ? INFINITE : NOT_A_NUMBER;
        value.magnitude = shifted_left(mantissa, 64u - M);
    } else if (field == 0u) {
        value.magnitude = mantissa;
        value.exponent = 1 - BIAS - int(M);
    } else {
        value.magnitude = mantissa | shifted_left(uvec2(1u, 0u), M);
        value.exponent = int(field) - BIAS - int(M);
    }
#else
    uvec2 wide = bits;
#if defined(SOURCE_SIGNED)
    if (SOURCE_BITS < 64u && (shifted_right(bits, SOURCE_BITS - 1u).x & 1u) != 0u) wide = bits | ~low_bits(SOURCE_BITS);
    value.negative = int(wide.y) < 0;
#endif
    value.magnitude = value.negative ? dml_wide_negated(wide) : wide;
#endif
    return value;
}

uvec2 encoded(Exact value) {
#if defined(TARGET_FLOAT)
    const uint M = uint(TARGET_MANTISSA_BITS), E = uint(TARGET_EXPONENT_BITS);
    const int BIAS = (1 << (E - 1u)) - 1;
    const uint ONES = (1u << E) - 1u;
    uvec2 sign = value.negative ? shifted_left(uvec2(1u, 0u), M + E) : uvec2(0u);
    uvec2 infinity = shifted_left(uvec2(ONES, 0u), M);
    if (value.kind == NOT_A_NUMBER) {
        return sign | infinity | shifted_left(uvec2(1u, 0u), M - 1u) | shifted_right(value.magnitude, 64u - M);
    }
    if (value.kind == INFINITE) return sign | infinity;
    if (value.magnitude == uvec2(0u)) return sign;
    int top = value.exponent + top_bit(value.magnitude);  // the leading bit's exponent
    int last = max(top, 1 - BIAS) - int(M);               // the kept last bit's
    int shift = last - value.exponent;
    uvec2 kept = shift <= 0 ? shifted_left(value.magnitude, uint(-shift)) : rounded_right(value.magnitude, uint(shift));
    // The exponent field below the leading bit's, then + kept (which holds the leading bit, and
    // carries into the field where rounding reaches the next power of two).
    // Past the largest finite number, the sum is at or past infinity's bits (fields below 2^11
    // and mantissas of at most 52 bits: no carry out of 64 bits).
    int field_below = top >= 1 - BIAS ? top + BIAS - 1 : 0;
    uvec2 bits = dml_wide_add(shifted_left(uvec2(uint(field_below), 0u), M), kept);
    return sign | (below(bits, infinity) ? bits : infinity);
#else
#if defined(SOURCE_FLOAT)
    // Toward zero, saturated to the range; NaN 0.
    if (value.kind == NOT_A_NUMBER) return uvec2(0u);
#if defined(TARGET_SIGNED)
    uvec2 limit = value.negative ? shifted_left(uvec2(1u, 0u), TARGET_BITS - 1u) : low_bits(TARGET_BITS - 1u);
#else
    uvec2 limit = value.negative ? uvec2(0u) : low_bits(TARGET_BITS);
#endif
    uvec2 truncated = limit;
    if (value.kind == FINITE) {
        if (value.exponent < 0) {
            truncated = -value.exponent >= 64 ? uvec2(0u) : shifted_right(value.magnitude, uint(-value.exponent));
        } else if (top_bit(value.magnitude) + value.exponent < 64) {
            truncated = shifted_left(value.magnitude, uint(value.exponent));
        }
        if (below(limit, truncated)) truncated = limit;
    }
    value.magnitude = truncated;
#endif
    uvec2 wide = value.negative ? dml_wide_negated(value.magnitude) : value.magnitude;
    return wide & low_bits(TARGET_BITS);  // the low bits of the target's width
#endif
}

#endif

// Tensor t's element at `at`: both words of a 64-bit tensor, else its bits zero-extended.
uvec2 element(uint t, uint at) {
    if (((WIDE_TENSORS >> t) & 1u) != 0u) return input_words(t, at);
    return uvec2(input_load(t, at), 0u);
}

void store_result(uint out_at, uvec2 result) {
    if (((WIDE_TENSORS >> INPUT_COUNT) & 1u) != 0u) {
        output_words(0u, out_at, result);
    } else {
        output_store(0u, out_at, result.x);
    }
}

uint invocation_index() {
    return (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * WORKGROUP_SIZE + gl_LocalInvocationID.x;
}

#if defined(ROWS)
const uint KEPT_SIZES_[KEPT_RANK] = uint[KEPT_RANK](KEPT_SIZES);
const uint KEPT_STRIDES_[KEPT_RANK * TENSOR_COUNT] = uint[KEPT_RANK * TENSOR_COUNT](KEPT_STRIDES);
const uint REDUCED_SIZES_[REDUCED_RANK] = uint[REDUCED_RANK](REDUCED_SIZES);
const uint REDUCED_STRIDES_[REDUCED_RANK * TENSOR_COUNT] = uint[REDUCED_RANK * TENSOR_COUNT](REDUCED_STRIDES);

struct Folded {
    uvec2 value;
    uint index;  // the extreme's, over the reduced dims
};

// `held` (of earlier elements) and `next` (of later ones) as one.
Folded folded(Folded held, Folded next) {
#if defined(COMBINE_SUM)
    return Folded(dml_wide_add(held.value, next.value), 0u);
#elif defined(COMBINE_PRODUCT)
    return Folded(dml_wide_mul_low(held.value, next.value), 0u);
#else
#if defined(COMBINE_LARGEST)
    bool ahead = less64(held.value, next.value), behind = less64(next.value, held.value);
#else
    bool ahead = less64(next.value, held.value), behind = less64(held.value, next.value);
#endif
#if defined(TIES_LAST)
    return behind ? held : next;
#else
    return ahead ? next : held;
#endif
#endif
}

void main() {
    uint item = invocation_index();
#if defined(STAGE_PARTIAL)
    if (item >= ROW_COUNT * CHUNK_COUNT) return;
    uint row = item % ROW_COUNT;
#else
    if (item >= ROW_COUNT) return;
    uint row = item;
#endif
    uint row_at[TENSOR_COUNT];
    [[unroll]] for (uint t = 0u; t < TENSOR_COUNT; ++t) row_at[t] = params.base[t];
    uint rest = row;
    [[unroll]] for (int d = KEPT_RANK - 1; d >= 0; --d) {
        uint index = rest % KEPT_SIZES_[d];
        [[unroll]] for (uint t = 0u; t < TENSOR_COUNT; ++t) row_at[t] += index * KEPT_STRIDES_[d * TENSOR_COUNT + t];
        rest /= KEPT_SIZES_[d];
    }
    Folded held;
#if defined(STAGE_PARTIAL)
    uint first = item / ROW_COUNT * CHUNK, end = min(first + CHUNK, REDUCED_COUNT);
    for (uint k = first; k < end; ++k) {
        uint at[TENSOR_COUNT] = row_at;
        uint index_rest = k;
        [[unroll]] for (int d = REDUCED_RANK - 1; d >= 0; --d) {
            uint index = index_rest % REDUCED_SIZES_[d];
            [[unroll]] for (uint t = 0u; t < INPUT_COUNT; ++t) at[t] += index * REDUCED_STRIDES_[d * TENSOR_COUNT + t];
            index_rest /= REDUCED_SIZES_[d];
        }
        uvec2 words[INPUT_COUNT];
        [[unroll]] for (uint t = 0u; t < INPUT_COUNT; ++t) words[t] = element(t, at[t]);
        Folded next = Folded(wide_math(words), k);
        held = k == first ? next : folded(held, next);
    }
#else
    for (uint c = 0u; c < CHUNK_COUNT; ++c) {
        uint partial_at = params.base[TENSOR_COUNT] + 3u * (c * ROW_COUNT + row);
        Folded next = Folded(uvec2(scratch[partial_at], scratch[partial_at + 1u]), scratch[partial_at + 2u]);
        held = c == 0u ? next : folded(held, next);
    }
#endif
#if defined(STAGE_PARTIAL) && defined(WRITES_PARTIALS)
    uint partial_at = params.base[TENSOR_COUNT] + 3u * item;
    scratch[partial_at] = held.value.x;
    scratch[partial_at + 1u] = held.value.y;
    scratch[partial_at + 2u] = held.index;
#elif defined(WRITE_INDEX)
    store_result(row_at[INPUT_COUNT], uvec2(held.index, 0u));
#else
    store_result(row_at[INPUT_COUNT], held.value);
#endif
}

#else
// One element's result from its inputs' words.
uvec2 computed(uvec2 words[INPUT_COUNT]) {
#if defined(CONVERT) && defined(SAME_TYPE)
    return words[0];  // the bits as they are (a NaN's payload too), as every same-type CAST
#elif defined(CONVERT)
    return encoded(decoded(words[0]));
#else
    return wide_math(words);
#endif
}

#if defined(PACKED_VECTORS)
#define IS_WIDE(t) (((WIDE_TENSORS >> (t)) & 1u) != 0u)
#define ITEM_VECTORS (ITEM_ELEMENTS / 2u)  // a 64-bit tensor's vectors an item; a 32-bit one's is half

// The first of tensor t's vectors that item `item` maps.
uint first_vector(uint t, uint item) {
    return (params.base[t] + item * ITEM_ELEMENTS) / (IS_WIDE(t) ? 2u : 4u);
}

void main() {
    uint item = invocation_index();
    if (item >= params.element_count / ITEM_ELEMENTS) return;  // the window's whole items
    uvec4 loaded[INPUT_COUNT][ITEM_VECTORS];
    [[unroll]] for (uint t = 0u; t < INPUT_COUNT; ++t) {
        [[unroll]] for (uint v = 0u; v < (IS_WIDE(t) ? ITEM_VECTORS : ITEM_VECTORS / 2u); ++v)
            loaded[t][v] = input_vector(t, first_vector(t, item) + v);
    }
    uvec4 stored[ITEM_VECTORS];
    [[unroll]] for (uint k = 0u; k < ITEM_ELEMENTS; ++k) {
        uvec2 words[INPUT_COUNT];
        [[unroll]] for (uint t = 0u; t < INPUT_COUNT; ++t) {
            words[t] = IS_WIDE(t) ? ((k & 1u) == 0u ? loaded[t][k / 2u].xy : loaded[t][k / 2u].zw)
                                  : uvec2(loaded[t][k / 4u][k % 4u], 0u);  // zero-extended, as element() reads it
        }
        uvec2 result = computed(words);
        if (!IS_WIDE(INPUT_COUNT)) {
            stored[k / 4u][k % 4u] = result.x;
        } else if ((k & 1u) == 0u) {
            stored[k / 2u].xy = result;
        } else {
            stored[k / 2u].zw = result;
        }
    }
    [[unroll]] for (uint v = 0u; v < (IS_WIDE(INPUT_COUNT) ? ITEM_VECTORS : ITEM_VECTORS / 2u); ++v)
        output_vector_store(0u, first_vector(INPUT_COUNT, item) + v, stored[v]);
}
#else
void main() {
    uint e = invocation_index();
    uint at[TENSOR_COUNT];
#if defined(PACKED)
#if defined(PACKED_TAIL)
    e += params.element_count / ITEM_ELEMENTS * ITEM_ELEMENTS;  // past the main dispatch's whole items
#endif
    if (e >= params.element_count) return;  // the window's elements
    [[unroll]] for (uint t = 0u; t < TENSOR_COUNT; ++t) at[t] = params.base[t] + e;
#else
    if (e >= ELEMENT_COUNT) return;
    [[unroll]] for (uint t = 0u; t < TENSOR_COUNT; ++t) at[t] = params.base[t];
    uint rest = e;
    [[unroll]] for (int d = RANK - 1; d >= 0; --d) {
        uint coordinate = rest % SIZES_[d];
        [[unroll]] for (uint t = 0u; t < TENSOR_COUNT; ++t) at[t] += coordinate * STRIDES_[d * TENSOR_COUNT + t];
        rest /= SIZES_[d];
    }
#endif
    uvec2 words[INPUT_COUNT];
    [[unroll]] for (uint t = 0u; t < INPUT_COUNT; ++t) words[t] = element(t, at[t]);
    store_result(at[INPUT_COUNT], computed(words));
}
#endif
#endif
