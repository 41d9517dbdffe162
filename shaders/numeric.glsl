// What a stored bit pattern means, per data type. Comparisons work on bits, so they are
// exact on every device, including devices that flush subnormals to zero.
//
// Defines: one of DTYPE_FLOAT32, DTYPE_FLOAT16, DTYPE_BFLOAT16, DTYPE_INT32, DTYPE_INT16,
// DTYPE_INT8, DTYPE_UINT32, DTYPE_UINT16, DTYPE_UINT8.

#if defined(DTYPE_FLOAT32)
#define POSITIVE_INFINITY_BITS 0x7F800000u
#elif defined(DTYPE_FLOAT16)
#define POSITIVE_INFINITY_BITS 0x7C00u
#elif defined(DTYPE_BFLOAT16)
#define POSITIVE_INFINITY_BITS 0x7F80u
#endif

// value > 0
bool is_positive(uint bits) {
#if defined(POSITIVE_INFINITY_BITS)
    // Positive floats are the bit patterns 1 .. +inf; NaN, -0 and negatives lie outside.
    return bits - 1u < POSITIVE_INFINITY_BITS;
#elif defined(DTYPE_INT32) || defined(DTYPE_INT16) || defined(DTYPE_INT8)
    return bits != 0u && (bits >> (ELEMENT_BITS - 1)) == 0u;
#elif defined(DTYPE_UINT32) || defined(DTYPE_UINT16) || defined(DTYPE_UINT8)
    return bits != 0u;
#else
#error no DTYPE_ define names the data type
#endif
}

// value is NaN, from the stored bits (never, for integers)
bool is_nan_bits(uint bits) {
#if defined(POSITIVE_INFINITY_BITS)
    return (bits & (ELEMENT_MASK >> 1)) > POSITIVE_INFINITY_BITS;
#else
    return false;
#endif
}

// Numbers from and to stored bits, for operators that compute in FP32. Every conversion is
// integer arithmetic, so it is exact and rounds to nearest even on every device: no
// reliance on how a driver implements packHalf2x16 or treats subnormals.
#if defined(DTYPE_FLOAT32)
float to_float(uint bits) { return uintBitsToFloat(bits); }
uint from_float(float value) { return floatBitsToUint(value); }

#elif defined(DTYPE_BFLOAT16)
float to_float(uint bits) { return uintBitsToFloat(bits << 16); }

uint from_float(float value) {
    uint u = floatBitsToUint(value);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (u >> 16) | 0x40u;  // NaN stays NaN (quiet)
    return (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
}

#elif defined(DTYPE_FLOAT16)
float to_float(uint half_bits) {
    uint sign = (half_bits & 0x8000u) << 16;
    uint exponent = (half_bits >> 10) & 0x1Fu;
    uint mantissa = half_bits & 0x3FFu;
    if (exponent == 0x1Fu) return uintBitsToFloat(sign | 0x7F800000u | (mantissa << 13));
    if (exponent != 0u) return uintBitsToFloat(sign | ((exponent + 112u) << 23) | (mantissa << 13));
    // Zero or subnormal: mantissa * 2^-24 is zero or a normal FP32 number, exactly.
    return uintBitsToFloat(sign | floatBitsToUint(float(mantissa) * 5.9604644775390625e-8));
}

uint from_float(float value) {
    uint u = floatBitsToUint(value);
    uint sign = (u >> 16) & 0x8000u;
    uint magnitude = u & 0x7FFFFFFFu;
    if (magnitude > 0x7F800000u) return sign | 0x7E00u | ((magnitude >> 13) & 0x3FFu);  // NaN, quiet
    if (magnitude >= 0x477FF000u) return sign | 0x7C00u;  // 65520 and up round to infinity
    if (magnitude >= 0x38800000u) {  // a normal half: re-bias the exponent, round 23 bits to 10
        uint rebased = magnitude - 0x38000000u;
        return sign | ((rebased + 0xFFFu + ((rebased >> 13) & 1u)) >> 13);
    }
    if (magnitude <= 0x33000000u) return sign;  // at most 2^-25: ties to the even zero
    // A subnormal half (or the smallest normal, after rounding up): count units of 2^-24.
    uint shift = 126u - (magnitude >> 23);
    uint significand = (magnitude & 0x7FFFFFu) | 0x800000u;
    uint units = significand >> shift;
    uint remainder = significand & ((1u << shift) - 1u);
    uint halfway = 1u << (shift - 1u);
    if (remainder > halfway || (remainder == halfway && (units & 1u) != 0u)) units += 1u;
    return sign | units;
}
#endif

// NaN tests and min/max decided on bits, so no driver's shortcut (fast-math folding of
// isnan, min/max returning either operand for NaN) changes a result: NaN in gives NaN out.
bool dml_isnan(float value) {
    return (floatBitsToUint(value) & 0x7FFFFFFFu) > 0x7F800000u;
}

// a == b as IEEE defines it (NaN equals nothing, -0 equals +0), on bits: a device that
// flushes subnormals would call two different subnormals equal.
bool dml_equal(float a, float b) {
    uint ua = floatBitsToUint(a), ub = floatBitsToUint(b);
    if (dml_isnan(a) || dml_isnan(b)) return false;
    return ua == ub || ((ua | ub) & 0x7FFFFFFFu) == 0u;
}

float dml_min(float a, float b) {
    return dml_isnan(a) || a < b ? a : b;
}

float dml_max(float a, float b) {
    return dml_isnan(a) || a > b ? a : b;
}

// a / b, correctly rounded (to nearest even) on every device. Vulkan lets a driver's
// division be off by 2.5 ULP, so the quotient is formed in integer arithmetic: the
// significands are divided bit by bit (25 quotient bits and a sticky remainder), then
// rounded once, to a normal or a subnormal result. Subnormal operands are normalised in
// integers too, so nothing depends on how a device treats subnormals.
uint dml_significand(uint magnitude, out int exponent) {
    uint biased = magnitude >> 23;
    if (biased != 0u) {
        exponent = int(biased) - 127;
        return (magnitude & 0x7FFFFFu) | 0x800000u;
    }
    int top = findMSB(magnitude);  // a subnormal: bring its leading one to bit 23
    exponent = top - 149;
    return magnitude << uint(23 - top);
}

float dml_div(float a, float b) {
    uint ua = floatBitsToUint(a), ub = floatBitsToUint(b);
    uint sign = (ua ^ ub) & 0x80000000u;
    uint ma = ua & 0x7FFFFFFFu, mb = ub & 0x7FFFFFFFu;
    if (ma > 0x7F800000u) return a;  // NaN in, NaN out
    if (mb > 0x7F800000u) return b;
    if (ma == 0x7F800000u) return mb == 0x7F800000u ? uintBitsToFloat(0x7FC00000u) : uintBitsToFloat(sign | 0x7F800000u);
    if (mb == 0x7F800000u || ma == 0u) return mb == 0u ? uintBitsToFloat(0x7FC00000u) : uintBitsToFloat(sign);
    if (mb == 0u) return uintBitsToFloat(sign | 0x7F800000u);
    int ea, eb;
    uint sa = dml_significand(ma, ea), sb = dml_significand(mb, eb);
    int exponent = ea - eb;
    uint remainder = sa;
    if (remainder < sb) {  // the quotient's leading bit is 1 only if sa >= sb
        remainder <<= 1;
        exponent -= 1;
    }
    uint quotient = 0u;  // 25 bits: 24 of the significand and one to round with
    [[unroll]] for (int i = 0; i < 25; ++i) {
        quotient <<= 1;
        if (remainder >= sb) {
            remainder -= sb;
            quotient |= 1u;
        }
        remainder <<= 1;
    }
    bool sticky = remainder != 0u;
    if (exponent > 127) return uintBitsToFloat(sign | 0x7F800000u);
    uint shift = 1u;  // bits to drop: the rounding bit, and more for a subnormal result
    if (exponent < -126) {
        int extra = -126 - exponent;
        if (extra > 25) return uintBitsToFloat(sign);  // below half the smallest subnormal
        sticky = sticky || (quotient & ((1u << uint(extra)) - 1u)) != 0u;
        quotient >>= uint(extra);
        exponent = -127;  // the subnormal exponent field, 0
    }
    uint kept = quotient >> shift;
    uint dropped = quotient & 1u;
    if (dropped == 1u && (sticky || (kept & 1u) == 1u)) kept += 1u;  // to nearest, ties to even
    // kept holds the significand with its leading one (normal) or without (subnormal); a
    // carry into bit 24 or into bit 23 moves the exponent up by one, as the addition does.
    uint bits = exponent == -127 ? kept : (uint(exponent + 126) << 23) + kept;
    return uintBitsToFloat(sign | min(bits, 0x7F800000u));
}
