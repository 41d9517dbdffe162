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
