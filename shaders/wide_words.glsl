// 64-bit elements (FLOAT64, INT64, UINT64, and 64-bit indices) in a tensor bound as 32-bit
// words: element k at words 2k (low) and 2k + 1 (high). Included after kernel_interface.glsl,
// whose input_load and output_store move the words.

#if INPUT_COUNT > 0
uvec2 input_words(uint t, uint at) {
    return uvec2(input_load(t, 2u * at), input_load(t, 2u * at + 1u));
}
#endif

void output_words(uint o, uint at, uvec2 words) {
    output_store(o, 2u * at, words.x);
    output_store(o, 2u * at + 1u, words.y);
}
