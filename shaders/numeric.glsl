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

float dml_min(float a, float b) {
    return dml_isnan(a) || a < b ? a : b;
}

float dml_max(float a, float b) {
    return dml_isnan(a) || a > b ? a : b;
}
