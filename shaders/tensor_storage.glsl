// Storage ABI shared by every dmlpy shader.
//
// Each tensor is bound as an array of 32-bit words: the Vulkan device is created without
// 8/16-bit storage features, so narrower elements are packed little-endian, element e in
// word e / (32 / BITS) at bit (e % (32 / BITS)) * BITS, BITS the tensor's own element bits.
// Values move as raw bits in a uint (zero-extended); operators turn bits into numbers only
// where needed.
//
// Defines: ELEMENT_BITS (8, 16 or 32), the bits of the words a kernel assembles whole (its
// output's); each tensor's own bits come with its binding (kernel_interface.glsl).

#if ELEMENT_BITS == 32
#define ELEMENTS_PER_WORD 1u
#define ELEMENT_MASK 0xFFFFFFFFu
#elif ELEMENT_BITS == 16
#define ELEMENTS_PER_WORD 2u
#define ELEMENT_MASK 0xFFFFu
#elif ELEMENT_BITS == 8
#define ELEMENTS_PER_WORD 4u
#define ELEMENT_MASK 0xFFu
#else
#error ELEMENT_BITS must be 8, 16 or 32
#endif

// Lane `lane` of a word of `bits`-bit elements (bits a constant: the branches fold away).
uint sized_lane_bits(uint word, uint lane, uint bits) {
    return bits == 32u ? word : (word >> (lane * bits)) & ((1u << bits) - 1u);
}

uint sized_with_lane_bits(uint word, uint lane, uint bits, uint value) {
    if (bits == 32u) return value;
    uint shift = lane * bits;
    return (word & ~(((1u << bits) - 1u) << shift)) | (value << shift);
}

uint lane_bits(uint word, uint lane) {
    return sized_lane_bits(word, lane, uint(ELEMENT_BITS));
}

uint with_lane_bits(uint word, uint lane, uint bits) {
    return sized_with_lane_bits(word, lane, uint(ELEMENT_BITS), bits);
}

// A tensor binding of BITS-bit elements: NAME[] is its words; NAME_load(e) reads element e's bits.
#define TENSOR_INPUT(BINDING, NAME, BITS)                                                  \
    layout(set = 0, binding = BINDING) readonly buffer NAME##_words { uint NAME[]; };      \
    uint NAME##_load(uint e) { return sized_lane_bits(NAME[e / (32u / BITS)], e % (32u / BITS), BITS); }

// The same binding seen as 16-byte vectors, for whole-vector loads and stores where the
// tensor is known to start on a 16-byte boundary.
#define TENSOR_VECTORS(BINDING, NAME, QUALIFIER)                                           \
    layout(set = 0, binding = BINDING) QUALIFIER buffer NAME##_vectors { uvec4 NAME##_vec4[]; };

// The same vectors as two 64-bit words (GL_EXT_shader_explicit_arithmetic_types_int64
// declared by the kernel): where a device loads and stores a vector component by component
// (lavapipe), half the components.
#define TENSOR_VECTOR_PAIRS(BINDING, NAME, QUALIFIER)                                      \
    layout(set = 0, binding = BINDING) QUALIFIER buffer NAME##_pairs { u64vec2 NAME##_pair[]; };

// NAME_store(e, bits) writes element e alone. A sub-word element shares its word with
// elements other invocations may write at the same time, so it is merged with a
// compare-and-swap loop that retries until no neighbour's write is lost.
#define TENSOR_OUTPUT(BINDING, NAME, BITS)                                                 \
    layout(set = 0, binding = BINDING) buffer NAME##_words { uint NAME[]; };               \
    void NAME##_store(uint e, uint bits) {                                                 \
        if (BITS == 32u) {                                                                 \
            NAME[e] = bits;                                                                \
            return;                                                                        \
        }                                                                                  \
        uint w = e / (32u / BITS), lane = e % (32u / BITS);                                \
        uint expected = NAME[w];                                                           \
        for (;;) {                                                                         \
            uint seen = atomicCompSwap(NAME[w], expected, sized_with_lane_bits(expected, lane, BITS, bits)); \
            if (seen == expected) break;                                                   \
            expected = seen;                                                               \
        }                                                                                  \
    }
