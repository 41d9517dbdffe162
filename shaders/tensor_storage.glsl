// Storage ABI shared by every dmlpy shader.
//
// Each tensor is bound as an array of 32-bit words: the Vulkan device is created without
// 8/16-bit storage features, so narrower elements are packed little-endian, element e in
// word e / ELEMENTS_PER_WORD at bit (e % ELEMENTS_PER_WORD) * ELEMENT_BITS. Values move as
// raw bits in a uint (zero-extended); operators turn bits into numbers only where needed.
//
// Defines: ELEMENT_BITS (8, 16 or 32).

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

uint lane_bits(uint word, uint lane) {
    return (word >> (lane * ELEMENT_BITS)) & ELEMENT_MASK;
}

uint with_lane_bits(uint word, uint lane, uint bits) {
    uint shift = lane * ELEMENT_BITS;
    return (word & ~(ELEMENT_MASK << shift)) | (bits << shift);
}

// A tensor binding: NAME[] is its words; NAME_load(e) reads element e's bits.
#define TENSOR_INPUT(BINDING, NAME)                                                        \
    layout(set = 0, binding = BINDING) readonly buffer NAME##_words { uint NAME[]; };      \
    uint NAME##_load(uint e) { return lane_bits(NAME[e / ELEMENTS_PER_WORD], e % ELEMENTS_PER_WORD); }

// The same binding seen as 16-byte vectors, for whole-vector loads and stores where the
// tensor is known to start on a 16-byte boundary.
#define TENSOR_VECTORS(BINDING, NAME, QUALIFIER)                                           \
    layout(set = 0, binding = BINDING) QUALIFIER buffer NAME##_vectors { uvec4 NAME##_vec4[]; };

// NAME_store(e, bits) writes element e alone. A sub-word element shares its word with
// elements other invocations may write at the same time, so it is merged with a
// compare-and-swap loop that retries until no neighbour's write is lost.
#if ELEMENT_BITS == 32
#define TENSOR_OUTPUT(BINDING, NAME)                                                       \
    layout(set = 0, binding = BINDING) buffer NAME##_words { uint NAME[]; };               \
    void NAME##_store(uint e, uint bits) { NAME[e] = bits; }
#else
#define TENSOR_OUTPUT(BINDING, NAME)                                                       \
    layout(set = 0, binding = BINDING) buffer NAME##_words { uint NAME[]; };               \
    void NAME##_store(uint e, uint bits) {                                                 \
        uint w = e / ELEMENTS_PER_WORD, lane = e % ELEMENTS_PER_WORD;                      \
        uint expected = NAME[w];                                                           \
        for (;;) {                                                                         \
            uint seen = atomicCompSwap(NAME[w], expected, with_lane_bits(expected, lane, bits)); \
            if (seen == expected) break;                                                   \
            expected = seen;                                                               \
        }                                                                                  \
    }
#endif
