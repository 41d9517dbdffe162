// Blocks of eight elements, for the kernels that walk rows (reduce.comp, scan.comp): where a
// row lies in whole aligned blocks, a block is one 16-byte vector (16-bit elements), two
// (32-bit) or two words (8-bit), every word within the block, so nothing outside the tensor
// is read or written. Needs kernel_interface.glsl's input_vector, input_word and
// output_vector_store (the kernel's interface has vector views).

// Elements one load of a tensor of `bits`-bit elements takes: a 16-byte vector's, or a
// word's of 8-bit elements. A block starts on a multiple of it.
uint block_load_elements(uint bits) {
    return bits == 8u ? 4u : 128u / bits;
}

// The words of input t's block of eight elements starting at element `at`.
void load_block(uint t, uint at, out uint words[8]) {
    uint bits = input_element_bits(t);
    if (bits == 32u) {
        uvec4 low = input_vector(t, at / 4u), high = input_vector(t, at / 4u + 1u);
        words = uint[8](low.x, low.y, low.z, low.w, high.x, high.y, high.z, high.w);
    } else if (bits == 16u) {
        uvec4 v = input_vector(t, at / 8u);
        words = uint[8](v.x, v.y, v.z, v.w, 0u, 0u, 0u, 0u);
    } else {
        words = uint[8](input_word(t, at / 4u), input_word(t, at / 4u + 1u), 0u, 0u, 0u, 0u, 0u, 0u);
    }
}

// Element j of a block input t's load_block read.
uint block_element(uint t, uint words[8], uint j) {
    uint bits = input_element_bits(t), per_word = 32u / bits;
    return sized_lane_bits(words[j / per_word], j % per_word, bits);
}

// Output o's block of eight elements (ELEMENT_BITS, 16 or 32) starting at element `at`: two
// vectors (32-bit) or one (16-bit), the whole block this invocation's.
void store_block(uint o, uint at, uint elements[8]) {
    if (ELEMENT_BITS == 32u) {
        output_vector_store(o, at / 4u, uvec4(elements[0], elements[1], elements[2], elements[3]));
        output_vector_store(o, at / 4u + 1u, uvec4(elements[4], elements[5], elements[6], elements[7]));
    } else {
        uvec4 words;
        [[unroll]] for (uint w = 0u; w < 4u; ++w) words[w] = (elements[2u * w] & 0xFFFFu) | (elements[2u * w + 1u] << 16);
        output_vector_store(o, at / 8u, words);
    }
}
