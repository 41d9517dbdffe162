#version 450
// The reduction kernel family: operators whose elements depend on reductions over rows of
// the tensor (REDUCE, ARGMIN, ARGMAX, the softmax family, PReLU's slope gradient). The domain is the first input's
// sizes, split into kept dims (ROW_COUNT rows) and reduced dims (REDUCED_COUNT elements a
// row, in increasing index order). The operator's math arrives as the generated header
// operator_body.glsl, rendered from its expression by dmlpy/ir/expr.py:
//   element_math(bits, totals, element, reduce_value, output_bits)  per element: the
//       reduction's term and the element outputs this stage writes;
//   row_math(totals, output_bits)                                   per row: the row outputs.
//
// A plan is a sequence of stages, each its own dispatch (dmlpy/kernels/reduction.py plan_reduction):
//   STAGE_PARTIAL  one invocation per (chunk of CHUNK elements, row): reduction REDUCTION
//                  over the chunk (and the element outputs whose totals are known), into
//                  the scratch: the row's total when the row is one chunk, else a partial.
//   STAGE_TOTAL    one invocation per row: REDUCTION's partials combined into its total.
//   STAGE_FINAL    the element outputs that need every total, per (chunk, row)
//                  (FINAL_ELEMENTS), and then the row outputs.
// Row outputs (ROW_OUTPUTS) are written by the stage that completes the last total.
// Sums are pairwise in the balanced binary tree over the row's elements (padded to a power
// of two); chunks (CHUNK, a power of two) are aligned subtrees of it. So the bits depend on
// the values alone: not on the layout, CHUNK, the workgroup size or the device. Products
// take the same tree. Max, min, the index of an extreme and integer reductions are exact
// in any order. No float atomics.
//
// Scratch (the temporary resource, FP32 bits or indices): the totals, REDUCTION_COUNT
// regions of ROW_COUNT words; then, where rows span chunks, each reduction's partials,
// CHUNK_COUNT * ROW_COUNT words at PARTIALS_AT, chunk-major (for an index of an extreme,
// the partials' ranks follow in as many words, at RANKS_AT).
//
// Defines: ELEMENT_BITS and DTYPE_* (the outputs'), WORKGROUP_SIZE, one STAGE_*,
// REDUCTION_COUNT, TOTALS_KNOWN (the totals this stage reads), ROW_COUNT, CHUNK, CHUNK_COUNT, REDUCED_COUNT, KEPT_RANK, KEPT_SIZES, KEPT_STRIDES,
// REDUCED_RANK, REDUCED_SIZES, REDUCED_STRIDES (per dim, one element stride per tensor:
// inputs, then outputs), ELEMENT_OUTPUTS and ROW_OUTPUTS (bit o: output o is written by
// this stage), and for STAGE_PARTIAL and STAGE_TOTAL: REDUCTION, PARTIALS_AT and one of
// REDUCE_SUM, REDUCE_PRODUCT, REDUCE_MAX, REDUCE_MIN (FP32 numbers) or REDUCE_WRAPPING_SUM,
// REDUCE_WRAPPING_PRODUCT, REDUCE_INTEGER_MAX, REDUCE_INTEGER_MIN (integers of input 0,
// signed where REDUCED_INPUT_SIGNED is defined),
// or REDUCE_ARG_MAX, REDUCE_ARG_MIN (the index of the first extreme, the last with ARG_LAST, of
// numbers or, with ARG_OF_INTEGERS, of integers of input 0);
// ROW_INPUTS (bit t: input t is constant along each row, read once a chunk);
// BLOCKS_OF_EIGHT (elements eight an iteration), BLOCK_LOADS (bit t: input t's rows lie in
// whole aligned blocks of eight, read one or two loads a block), BLOCK_STORES (bit o: element
// output o's rows lie in such blocks, 16- or 32-bit, written a block at a time);
// WIDE_OUTPUTS (bit o: output o is 64-bit, a row output bound as UINT32 words, element k at
// words 2k and 2k + 1, written as its value zero-extended: an index);
// ROW_GROUP (STAGE_PARTIAL): the rows one invocation reduces side by side, adjacent along the
// innermost kept dim, where each reduced index's elements of the group lie in whole 16-byte
// vectors of every input and element output (read and written a vector at a time where the
// dispatch's bases are multiples of one): a column reduction then moves whole vectors, as a
// row's blocks do. Each row keeps its own tree, so the bits are a lone row's.
// LOCKSTEP_ROWS (STAGE_PARTIAL with ROW_GROUP, a CPU device): the workgroup's invocations
// meet at a barrier every so many reduced indices of their chunks, which are all as long,
// so that a CPU device's SIMD slices, which it runs one after another, read the same rows
// together (dmlpy/kernels/reduction.py lockstep_workgroup).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#if defined(VECTOR_WORDS_64)
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#endif
#include "float_controls.glsl"

#include "tensor_storage.glsl"
#include "numeric.glsl"
#ifdef USES_TRANSCENDENTALS
#include "transcendental.glsl"
#endif

#define TOTAL_SLOTS (REDUCTION_COUNT > 0 ? REDUCTION_COUNT : 1)
#ifndef ROW_GROUP
#define ROW_GROUP 1
#endif
#define ROW_GROUPS (ROW_COUNT / ROW_GROUP)
#define RANKS_AT (PARTIALS_AT + CHUNK_COUNT * ROW_COUNT)  // an index of an extreme's partial ranks
#define NO_INDEX 0xFFFFFFFFu

layout(local_size_x = WORKGROUP_SIZE) in;

// The bindings (inputs, outputs, then the scratch), their accessors (input_load,
// output_store) and the Params block (params.base[]: each tensor's first element in its
// binding, then the scratch's first word; params.element_count; params.scalar_bits[]),
// generated from dmlpy/kernels/interface.py.
#include "kernel_interface.glsl"
#include "wide_words.glsl"

#if defined(REDUCE_ARG_MAX) || defined(REDUCE_ARG_MIN)
#define REDUCE_ARG
#endif

#if defined(REDUCE_WRAPPING_SUM) || defined(REDUCE_WRAPPING_PRODUCT) || defined(REDUCE_INTEGER_MAX) || \
      defined(REDUCE_INTEGER_MIN) || defined(ARG_OF_INTEGERS)
#define REDUCE_VALUE uvec2
#define VALUE_OF_BITS(bits) uvec2(bits, 0u)
#else
#define REDUCE_VALUE float
#define VALUE_OF_BITS(bits) uintBitsToFloat(bits)
#endif

// An integer total (the low 32 bits of an integer reduction of input 0) as an exact
// integer, sign-extended where input 0 is signed.
uvec2 total_as_wide(uint bits) {
#if defined(REDUCED_INPUT_SIGNED)
    return uvec2(bits, int(bits) < 0 ? 0xFFFFFFFFu : 0u);
#else
    return uvec2(bits, 0u);
#endif
}

#if defined(STAGE_ROW)
// STAGE_ROW's row in private memory (run_row): each element's input bits, and the values a
// later pass reads from an earlier one (the generated row_term stores and reads row_values).
uint private_row[REDUCED_COUNT][INPUT_COUNT];
#if KEPT_VALUES > 0
float row_values[KEPT_VALUES][REDUCED_COUNT];
#endif
// Called in order by the generated row_reductions, one call a reduction.
uint row_total(uint k, uint totals[TOTAL_SLOTS], uint row_at[TENSOR_COUNT], bool vectors);
#endif

#include "operator_body.glsl"

const uint KEPT_SIZES_[KEPT_RANK] = uint[KEPT_RANK](KEPT_SIZES);
const uint KEPT_STRIDES_[KEPT_RANK * TENSOR_COUNT] = uint[KEPT_RANK * TENSOR_COUNT](KEPT_STRIDES);
const uint REDUCED_SIZES_[REDUCED_RANK] = uint[REDUCED_RANK](REDUCED_SIZES);
const uint REDUCED_STRIDES_[REDUCED_RANK * TENSOR_COUNT] = uint[REDUCED_RANK * TENSOR_COUNT](REDUCED_STRIDES);

void row_offsets(uint row, out uint offsets[TENSOR_COUNT]) {
    [[unroll]] for (uint t = 0u; t < TENSOR_COUNT; ++t) offsets[t] = params.base[t];
    [[unroll]] for (int d = KEPT_RANK - 1; d >= 0; --d) {
        uint index = row % KEPT_SIZES_[d];
        [[unroll]] for (uint t = 0u; t < TENSOR_COUNT; ++t) offsets[t] += index * KEPT_STRIDES_[d * TENSOR_COUNT + t];
        row /= KEPT_SIZES_[d];
    }
}

// The offsets of element `element` of the row at `row_at`: one step along the innermost
// reduced dim from those of element - 1, or computed afresh at the start of a run.
void element_offsets(uint row_at[TENSOR_COUNT], uint element, bool afresh, inout uint offsets[TENSOR_COUNT]) {
    if (afresh || element % REDUCED_SIZES_[REDUCED_RANK - 1] == 0u) {
        offsets = row_at;
        uint e = element;
        [[unroll]] for (int d = REDUCED_RANK - 1; d >= 0; --d) {
            uint index = e % REDUCED_SIZES_[d];
            [[unroll]] for (uint t = 0u; t < TENSOR_COUNT; ++t) offsets[t] += index * REDUCED_STRIDES_[d * TENSOR_COUNT + t];
            e /= REDUCED_SIZES_[d];
        }
    } else {
        [[unroll]] for (uint t = 0u; t < TENSOR_COUNT; ++t) offsets[t] += REDUCED_STRIDES_[(REDUCED_RANK - 1) * TENSOR_COUNT + t];
    }
}

uint scratch_word(uint index) {
    return params.base[TENSOR_COUNT] + index;
}

// Integers of at most 32 bits are ordered by a key: the value's bits, with the sign bit
// flipped where input 0 is signed.
#if defined(REDUCED_INPUT_SIGNED)
#define KEY_FLIP 0x80000000u
#else
#define KEY_FLIP 0u
#endif

// An order key on a number's bits, for its maximum and minimum: -0 below +0, no device's
// subnormal flushing involved.
uint order_key(float value) {
    uint bits = floatBitsToUint(value);
    return (bits & 0x80000000u) != 0u ? ~bits : bits | 0x80000000u;
}

#if defined(DENORMALS_EXACT)
// Whether a sum's term is not plain: not a zero, nor a multiple of 2^-126 below 2^64
// (biased exponents 24 to 190). Every partial sum of plain terms is again a multiple of
// 2^-126, below 2^76 for a row of 4,096 of them, so never subnormal and never infinite: the
// hardware's adds are then IEEE's on every device, even one that flushes subnormals.
uint not_plain(float value) {
    uint magnitude = floatBitsToUint(value) & 0x7FFFFFFFu;
    return uint(magnitude != 0u) & (uint(magnitude < (24u << 23)) | uint(magnitude >= (191u << 23)));
}
#endif

// The floating reductions, by name where one stage takes several (STAGE_ROW).
#define OP_SUM 0u
#define OP_PRODUCT 1u
#define OP_MAX 2u
#define OP_MIN 3u

// Reduction `op`'s combination of a and b, a's elements before b's: a sum (with `hardware`,
// the hardware's add, see CHECKED_SUMS) or a product; a maximum or minimum by order_key, the
// first NaN kept.
float combine(uint op, float a, float b, bool hardware) {
    if (op == OP_SUM) return hardware ? dml_hardware_add(a, b) : dml_add(a, b);
    if (op == OP_PRODUCT) return dml_mul(a, b);
    bool later_wins = op == OP_MAX ? order_key(b) > order_key(a) : order_key(b) < order_key(a);
    return !dml_isnan(a) && (dml_isnan(b) || later_wins) ? b : a;
}

// What reduction `op` starts from: -0 (IEEE addition's identity), 1, -inf or +inf.
float identity_of(uint op) {
    return uintBitsToFloat(op == OP_SUM ? 0x80000000u : op == OP_PRODUCT ? 0x3F800000u
                           : op == OP_MAX ? 0xFF800000u : 0x7F800000u);
}

#if defined(REDUCE_SUM) || defined(REDUCE_PRODUCT) || defined(STAGE_ROW)
// Pairwise summation (or multiplication) by a binary counter: term i is combined with the
// partial results of equal size on the stack while i's low bits are ones, so the terms form
// the balanced binary tree; what is left on the stack at the end is combined from the
// smallest partial result up, which is that tree padded to a power of two.
#if defined(REDUCE_SUM)
#define STACK_OP OP_SUM
#elif defined(REDUCE_PRODUCT)
#define STACK_OP OP_PRODUCT
#endif
#define STACK_DEPTH 33
// Each row of the group has its own stack; the rows take their terms at the same indices, so
// one size serves them all (and lavapipe indexes the stacks once a merge, not once a row).
float stack_sums[ROW_GROUP][STACK_DEPTH];
uint stack_size;

void start_stack() { stack_size = 0u; }

// Term k of its level (an element, a block of eight, a chunk) of each row of the group into
// the stack of that level's results, combined by `op`; with `hardware` (sums only, see
// CHECKED_SUMS), by the hardware's add.
void take_at(uint op, uint k, float terms[ROW_GROUP], bool hardware) {
    for (; (k & 1u) != 0u; k >>= 1) {
        --stack_size;
        [[unroll]] for (uint g = 0u; g < ROW_GROUP; ++g) terms[g] = combine(op, stack_sums[g][stack_size], terms[g], hardware);
    }
    [[unroll]] for (uint g = 0u; g < ROW_GROUP; ++g) stack_sums[g][stack_size] = terms[g];
    ++stack_size;
}

// Eight elements i..i+7 (i a multiple of 8) of each row at once: an aligned subtree, one trip
// through the stack.
void take_eight(uint op, uint i, float eight[ROW_GROUP][8], bool hardware) {
    float totals[ROW_GROUP];
    [[unroll]] for (uint g = 0u; g < ROW_GROUP; ++g) {
        float v[8] = eight[g];
        totals[g] = combine(op, combine(op, combine(op, v[0], v[1], hardware), combine(op, v[2], v[3], hardware), hardware),
                            combine(op, combine(op, v[4], v[5], hardware), combine(op, v[6], v[7], hardware), hardware),
                            hardware);
    }
    take_at(op, i >> 3, totals, hardware);
}

// The stack's total of row g of the group (an empty one's: the identity).
float stack_total(uint op, uint g) {
    if (stack_size == 0u) return identity_of(op);
    float total = stack_sums[g][stack_size - 1u];
    for (uint k = stack_size - 1u; k > 0u; --k) {
        total = combine(op, stack_sums[g][k - 1u], total, false);
    }
    return total;
}
#endif

#if defined(REDUCE_SUM) || defined(REDUCE_PRODUCT)
void start_reductions() { start_stack(); }

void take(uint i, float terms[ROW_GROUP]) { take_at(STACK_OP, i, terms, false); }

#if defined(REDUCE_SUM) && defined(DENORMALS_EXACT)
// On a device that may flush subnormals, dml_add's checks on every add (and their branches,
// which a SIMD device runs for every lane) would cost more than the sum itself. So a chunk is
// first summed with the hardware's adds, and summed again with dml_add only if a term is not
// plain (not_plain).
#define CHECKED_SUMS
#endif

uint taken_bits(uint g) { return floatBitsToUint(stack_total(STACK_OP, g)); }
#elif defined(REDUCE_MAX) || defined(REDUCE_MIN)
// In order, by combine: order_key (-0 below +0); NaN wins, the first one met.
#if defined(REDUCE_MAX)
#define EXTREME_OP OP_MAX
#else
#define EXTREME_OP OP_MIN
#endif
float extreme[ROW_GROUP];

void start_reductions() {
    [[unroll]] for (uint g = 0u; g < ROW_GROUP; ++g) extreme[g] = identity_of(EXTREME_OP);
}

void take(uint i, float values[ROW_GROUP]) {
    [[unroll]] for (uint g = 0u; g < ROW_GROUP; ++g) extreme[g] = combine(EXTREME_OP, extreme[g], values[g], false);
}

uint taken_bits(uint g) { return floatBitsToUint(extreme[g]); }
#elif defined(REDUCE_WRAPPING_SUM) || defined(REDUCE_WRAPPING_PRODUCT)
// Integer sums and products wrap to 32 bits: exact in any order.
uint wrapped[ROW_GROUP];
#if defined(REDUCE_WRAPPING_SUM)
void start_reductions() { [[unroll]] for (uint g = 0u; g < ROW_GROUP; ++g) wrapped[g] = 0u; }
void take_bits(uint g, uint bits) { wrapped[g] += bits; }
#else
void start_reductions() { [[unroll]] for (uint g = 0u; g < ROW_GROUP; ++g) wrapped[g] = 1u; }
void take_bits(uint g, uint bits) { wrapped[g] *= bits; }
#endif

void take(uint i, uvec2 values[ROW_GROUP]) {
    [[unroll]] for (uint g = 0u; g < ROW_GROUP; ++g) take_bits(g, values[g].x);
}

uint taken_bits(uint g) { return wrapped[g]; }
#elif defined(REDUCE_INTEGER_MAX) || defined(REDUCE_INTEGER_MIN)
uint extreme_key[ROW_GROUP];
#if defined(REDUCE_INTEGER_MAX)
void start_reductions() { [[unroll]] for (uint g = 0u; g < ROW_GROUP; ++g) extreme_key[g] = 0u; }
void take_bits(uint g, uint bits) { extreme_key[g] = max(extreme_key[g], bits ^ KEY_FLIP); }
#else
void start_reductions() { [[unroll]] for (uint g = 0u; g < ROW_GROUP; ++g) extreme_key[g] = 0xFFFFFFFFu; }
void take_bits(uint g, uint bits) { extreme_key[g] = min(extreme_key[g], bits ^ KEY_FLIP); }
#endif

void take(uint i, uvec2 values[ROW_GROUP]) {
    [[unroll]] for (uint g = 0u; g < ROW_GROUP; ++g) take_bits(g, values[g].x);
}

uint taken_bits(uint g) { return extreme_key[g] ^ KEY_FLIP; }
#elif defined(REDUCE_ARG)
// The index of an extreme in one pass. Each term has a rank, an unsigned key under which the
// extreme sought is the largest: a number's order key (-0 taken as +0, so the two tie), or an
// integer's KEY, inverted for a minimum; a NaN ranks above every number. The best rank's
// index is kept, the first met (ARG_LAST: the last); elements and chunks are met in
// increasing order, so the result is the row's first (last) extreme in any chunking.
uint best_rank[ROW_GROUP], best_index[ROW_GROUP];

void start_reductions() {
    [[unroll]] for (uint g = 0u; g < ROW_GROUP; ++g) {
        best_rank[g] = 0u;
        best_index[g] = NO_INDEX;
    }
}

void take_ranked(uint g, uint rank, uint index) {
#if defined(ARG_LAST)
    if (best_index[g] == NO_INDEX || rank >= best_rank[g]) {
#else
    if (best_index[g] == NO_INDEX || rank > best_rank[g]) {
#endif
        best_rank[g] = rank;
        best_index[g] = index;
    }
}

#if defined(REDUCE_ARG_MAX)
#define RANK_FLIP 0u
#else
#define RANK_FLIP 0xFFFFFFFFu
#endif
#if defined(ARG_OF_INTEGERS)
uint rank_of(uvec2 value) { return (value.x ^ KEY_FLIP) ^ RANK_FLIP; }
#else
uint rank_of(float value) {
    uint bits = floatBitsToUint(value);
    if (dml_isnan(value)) return 0xFFFFFFFFu;
    if (bits == 0x80000000u) bits = 0u;
    return ((bits & 0x80000000u) != 0u ? ~bits : bits | 0x80000000u) ^ RANK_FLIP;
}
#endif

uint taken_bits(uint g) { return best_index[g]; }
#else
void start_reductions() {}
#endif

// Element `element` of each row's chunk starting at `first` into this stage's reduction.
void take_element(uint element, uint first, REDUCE_VALUE values[ROW_GROUP]) {
#if defined(REDUCE_ARG)
    [[unroll]] for (uint g = 0u; g < ROW_GROUP; ++g) take_ranked(g, rank_of(values[g]), element);
#elif defined(STAGE_PARTIAL)
    take(element - first, values);
#endif
}

#if defined(STAGE_TOTAL) && !defined(REDUCE_ARG)
// Chunk `chunk`'s partial result (its bits) into the row's total (a total stage's groups are
// one row).
void take_partial(uint chunk, uint bits) {
    REDUCE_VALUE values[ROW_GROUP];
    values[0] = VALUE_OF_BITS(bits);
    take(chunk, values);
}
#endif

#if BLOCK_LOADS != 0 || BLOCK_STORES != 0 || ROW_GROUP > 1
#include "row_blocks.glsl"

// Whether this dispatch's inputs marked in BLOCK_LOADS and outputs in BLOCK_STORES start on a
// multiple of their loads, and with ROW_GROUP, every input on a multiple of its vectors (the
// planner checked the strides and the bindings' alignment; the base is the dispatch's).
bool vectors_aligned() {
    bool aligned = true;
    [[unroll]] for (uint t = 0u; t < INPUT_COUNT; ++t) {
        if (((BLOCK_LOADS >> t) & 1u) != 0u || ROW_GROUP > 1)
            aligned = aligned && params.base[t] % block_load_elements(input_element_bits(t)) == 0u;
    }
    [[unroll]] for (uint o = 0u; o < OUTPUT_COUNT; ++o) {
        if (((BLOCK_STORES >> o) & 1u) != 0u || (ROW_GROUP > 1 && ((ELEMENT_OUTPUTS >> o) & 1u) != 0u))
            aligned = aligned && params.base[INPUT_COUNT + o] % block_load_elements(ELEMENT_BITS) == 0u;
    }
    return aligned;
}
#endif

#if ROW_GROUP > 1
#if BLOCK_LOADS != 0 || BLOCK_STORES != 0 || !defined(STAGE_PARTIAL)
#error "ROW_GROUP: a partial stage without blocks"
#endif
#endif

// Whether this stage's result is the row's total (else a chunk's partial).
#if defined(STAGE_TOTAL)
#define WHOLE_ROW true
#else
#define WHOLE_ROW (CHUNK_COUNT == 1u)
#endif

#if defined(STAGE_PARTIAL) || defined(FINAL_ELEMENTS)
// The inputs' bits of one element of each row of the group, whose first row's element is at
// `offsets` (the group's rows are one element apart in every input): with `vectors`, each
// input's whole vectors of them; those of ROW_INPUTS from row_bits.
void load_group(uint offsets[TENSOR_COUNT], bool vectors, uint row_bits[ROW_GROUP][INPUT_COUNT],
                out uint bits[ROW_GROUP][INPUT_COUNT]) {
    [[unroll]] for (uint t = 0u; t < INPUT_COUNT; ++t) {
        if (((ROW_INPUTS >> t) & 1u) != 0u) {
            [[unroll]] for (uint g = 0u; g < ROW_GROUP; ++g) bits[g][t] = row_bits[g][t];
            continue;
        }
#if ROW_GROUP > 1
        if (vectors) {
            uint per_vector = 128u / input_element_bits(t), per_word = 32u / input_element_bits(t);
            [[unroll]] for (uint v = 0u; v < ROW_GROUP / per_vector; ++v) {
                uvec4 words = input_vector(t, offsets[t] / per_vector + v);
                [[unroll]] for (uint k = 0u; k < per_vector; ++k)
                    bits[v * per_vector + k][t] = sized_lane_bits(words[k / per_word], k % per_word, input_element_bits(t));
            }
            continue;
        }
#endif
        [[unroll]] for (uint g = 0u; g < ROW_GROUP; ++g) bits[g][t] = input_load(t, offsets[t] + g);
    }
}

// Element output o's values of the group's rows at one reduced index, the first row's at `at`
// (the rest one element apart): with `vectors`, whole vectors.
void store_group(uint o, uint at, bool vectors, uint values[ROW_GROUP]) {
#if ROW_GROUP > 1
    if (vectors) {
        uint per_vector = 128u / ELEMENT_BITS;
        [[unroll]] for (uint v = 0u; v < ROW_GROUP / per_vector; ++v) {
            uvec4 words;
            [[unroll]] for (uint w = 0u; w < 4u; ++w) {
                words[w] = ELEMENT_BITS == 32u ? values[4u * v + w]
                    : (values[8u * v + 2u * w] & 0xFFFFu) | (values[8u * v + 2u * w + 1u] << 16);
            }
            output_vector_store(o, at / per_vector + v, words);
        }
    } else
#endif
    {
        [[unroll]] for (uint g = 0u; g < ROW_GROUP; ++g) output_store(o, at + g, values[g]);
    }
}

// Before the chunk's element i: at every LOCKSTEP_ROWS-th, wait for the workgroup.
void keep_lockstep(uint i) {
#if defined(LOCKSTEP_ROWS)
    if (i != 0u && i % LOCKSTEP_ROWS == 0u) barrier();
#endif
}

// The elements of the chunk [first, end) of the group's rows (the first at row_at): the
// element outputs this stage writes, and its reduction of their terms. With `hardware`
// (CHECKED_SUMS), a sum's adds are the hardware's, and the result is nonzero where a term was
// not plain.
uint walk_chunk(uint first, uint end, uint row_at[TENSOR_COUNT], uint totals[ROW_GROUP][TOTAL_SLOTS], bool hardware,
                bool vectors) {
    uint offsets[TENSOR_COUNT];
    uint output_bits[OUTPUT_COUNT];
    uint unplain = 0u;
    uint element = first;
    // Inputs constant along a row (broadcast over the reduced dims) are read once.
    uint row_bits[ROW_GROUP][INPUT_COUNT];
    [[unroll]] for (uint t = 0u; t < INPUT_COUNT; ++t) {
        [[unroll]] for (uint g = 0u; g < ROW_GROUP; ++g)
            row_bits[g][t] = ((ROW_INPUTS >> t) & 1u) != 0u ? input_load(t, row_at[t] + g) : 0u;
    }
#if defined(BLOCKS_OF_EIGHT)
    // Eight elements an iteration (the chunk's last incomplete block goes element by
    // element, below); with `vectors`, inputs in BLOCK_LOADS read a block at a time and outputs
    // in BLOCK_STORES are written a block at a time.
#if BLOCK_LOADS != 0
    uint block_words[INPUT_COUNT][8];
#endif
#if BLOCK_STORES != 0
    uint block_outputs[OUTPUT_COUNT][8];
    uint block_at[TENSOR_COUNT];
#endif
    for (; element + 8u <= end; element += 8u) {
        keep_lockstep(element - first);
#if defined(REDUCE_SUM) || defined(REDUCE_PRODUCT)
        float eight[ROW_GROUP][8];
#endif
        [[unroll]] for (uint j = 0u; j < 8u; ++j) {
            element_offsets(row_at, element + j, element + j == first, offsets);
#if BLOCK_STORES != 0
            if (j == 0u) block_at = offsets;
#endif
            uint bits[ROW_GROUP][INPUT_COUNT];
#if BLOCK_LOADS != 0
            [[unroll]] for (uint t = 0u; t < INPUT_COUNT; ++t) {
                if (((ROW_INPUTS >> t) & 1u) != 0u) {
                    bits[0][t] = row_bits[0][t];
                } else if (((BLOCK_LOADS >> t) & 1u) != 0u && vectors) {
                    if (j == 0u) load_block(t, offsets[t], block_words[t]);
                    bits[0][t] = block_element(t, block_words[t], j);
                } else {
                    bits[0][t] = input_load(t, offsets[t]);
                }
            }
#else
            load_group(offsets, vectors, row_bits, bits);
#endif
            REDUCE_VALUE values[ROW_GROUP];
            uint group_outputs[OUTPUT_COUNT][ROW_GROUP];
            [[unroll]] for (uint g = 0u; g < ROW_GROUP; ++g) {
                REDUCE_VALUE value;
                element_math(bits[g], totals[g], element + j, value, output_bits);
                values[g] = value;
                [[unroll]] for (uint o = 0u; o < OUTPUT_COUNT; ++o) group_outputs[o][g] = output_bits[o];
#if defined(REDUCE_SUM) || defined(REDUCE_PRODUCT)
                eight[g][j] = value;
#if defined(CHECKED_SUMS)
                if (hardware) unplain |= not_plain(value);
#endif
#endif
            }
            [[unroll]] for (uint o = 0u; o < OUTPUT_COUNT; ++o) {
                if (((ELEMENT_OUTPUTS >> o) & 1u) == 0u) continue;
#if BLOCK_STORES != 0
                if (((BLOCK_STORES >> o) & 1u) != 0u && vectors) {
                    block_outputs[o][j] = group_outputs[o][0];
                    continue;
                }
#endif
                store_group(o, offsets[INPUT_COUNT + o], vectors, group_outputs[o]);
            }
#if !defined(REDUCE_SUM) && !defined(REDUCE_PRODUCT)
            take_element(element + j, first, values);
#endif
        }
#if defined(REDUCE_SUM) || defined(REDUCE_PRODUCT)
        take_eight(STACK_OP, element - first, eight, hardware);
#endif
#if BLOCK_STORES != 0
        [[unroll]] for (uint o = 0u; o < OUTPUT_COUNT; ++o) {
            if (((BLOCK_STORES >> o) & 1u) != 0u && vectors) store_block(o, block_at[INPUT_COUNT + o], block_outputs[o]);
        }
#endif
    }
#endif
    for (; element < end; ++element) {
        keep_lockstep(element - first);
        element_offsets(row_at, element, element == first, offsets);
        uint bits[ROW_GROUP][INPUT_COUNT];
        load_group(offsets, vectors, row_bits, bits);
        REDUCE_VALUE values[ROW_GROUP];
        uint group_outputs[OUTPUT_COUNT][ROW_GROUP];
        [[unroll]] for (uint g = 0u; g < ROW_GROUP; ++g) {
            REDUCE_VALUE value;
            element_math(bits[g], totals[g], element, value, output_bits);
            values[g] = value;
            [[unroll]] for (uint o = 0u; o < OUTPUT_COUNT; ++o) group_outputs[o][g] = output_bits[o];
#if defined(CHECKED_SUMS)
            if (hardware) unplain |= not_plain(value);
#endif
        }
        [[unroll]] for (uint o = 0u; o < OUTPUT_COUNT; ++o) {
            if (((ELEMENT_OUTPUTS >> o) & 1u) != 0u) store_group(o, offsets[INPUT_COUNT + o], vectors, group_outputs[o]);
        }
#if defined(CHECKED_SUMS)
        if (hardware) {
            take_at(STACK_OP, element - first, values, true);
            continue;
        }
#endif
        take_element(element, first, values);
    }
    return unplain;
}

// walk_chunk with the vector loads and stores this dispatch's alignment allows. Decided once,
// out here: tested inside the loop, the condition made lavapipe keep both kinds of load (half
// the speed).
uint walk(uint first, uint end, uint row_at[TENSOR_COUNT], uint totals[ROW_GROUP][TOTAL_SLOTS], bool hardware) {
#if BLOCK_LOADS != 0 || BLOCK_STORES != 0 || ROW_GROUP > 1
    if (vectors_aligned()) return walk_chunk(first, end, row_at, totals, hardware, true);
#endif
    return walk_chunk(first, end, row_at, totals, hardware, false);
}
#endif

#if defined(STAGE_ROW)
const uint REDUCTION_OPS_[REDUCTION_COUNT] = uint[REDUCTION_COUNT](REDUCTION_OPS);

// Element `element`'s input bits: with `loading`, read from the buffers (at `offsets`; with
// `vectors`, those in BLOCK_LOADS a block of eight at a time, the block's first element
// reading it into block_words) into private_row; else from private_row.
void row_element(uint element, uint j, bool loading, bool vectors, uint offsets[TENSOR_COUNT],
                 inout uint block_words[INPUT_COUNT][8], out uint bits[INPUT_COUNT]) {
    if (!loading) {
        bits = private_row[element];
        return;
    }
    [[unroll]] for (uint t = 0u; t < INPUT_COUNT; ++t) {
#if BLOCK_LOADS != 0
        if (vectors && ((BLOCK_LOADS >> t) & 1u) != 0u) {
            if (j == 0u) load_block(t, offsets[t], block_words[t]);
            bits[t] = block_element(t, block_words[t], j);
            continue;
        }
#endif
        bits[t] = input_load(t, offsets[t]);
    }
    private_row[element] = bits;
}

// Reduction k over the row, from the totals before it: its terms eight at a time, a sum or a
// product in the stack's tree (as the partial stage's walk for a row of one chunk), a
// maximum or minimum in order. With `loading` (the first reduction), the row is read from
// the buffers into private_row as it goes (at row_at, see row_element); later ones walk
// private_row. With `hardware` (sums), the hardware's adds; returns nonzero where a term was
// not plain.
uint row_walk(uint k, uint totals[TOTAL_SLOTS], bool hardware, bool loading, bool vectors, uint row_at[TENSOR_COUNT],
              out float total) {
    uint op = REDUCTION_OPS_[k];
    bool in_order = op == OP_MAX || op == OP_MIN;
    float extreme = identity_of(op);
    uint unplain = 0u;
    start_stack();
    uint offsets[TENSOR_COUNT];
    uint block_words[INPUT_COUNT][8];
    uint bits[INPUT_COUNT];
    uint element = 0u;
    for (; element + 8u <= REDUCED_COUNT; element += 8u) {
        float eight[1][8];
        [[unroll]] for (uint j = 0u; j < 8u; ++j) {
            if (loading) element_offsets(row_at, element + j, element + j == 0u, offsets);
            row_element(element + j, j, loading, vectors, offsets, block_words, bits);
            eight[0][j] = row_term(k, bits, totals, element + j);
#if defined(DENORMALS_EXACT)
            unplain |= not_plain(eight[0][j]);
#endif
            if (in_order) extreme = combine(op, extreme, eight[0][j], false);
        }
        if (!in_order) take_eight(op, element, eight, hardware);
    }
    for (; element < REDUCED_COUNT; ++element) {
        if (loading) element_offsets(row_at, element, element == 0u, offsets);
        row_element(element, 1u, loading, false, offsets, block_words, bits);
        float one[1];
        one[0] = row_term(k, bits, totals, element);
#if defined(DENORMALS_EXACT)
        unplain |= not_plain(one[0]);
#endif
        if (in_order) extreme = combine(op, extreme, one[0], false);
        else take_at(op, element, one, hardware);
    }
    total = in_order ? extreme : stack_total(op, 0u);
    return unplain;
}

// The bits of reduction k's total over the row (row_reductions takes them in order; the
// first reads the row, with `vectors` as run_row decided).
uint row_total(uint k, uint totals[TOTAL_SLOTS], uint row_at[TENSOR_COUNT], bool vectors) {
    float total;
    bool loading = k == 0u;
#if defined(DENORMALS_EXACT)
    // Plain terms: the hardware's adds were exact (not_plain); else the sum again, by dml_add,
    // from private_row. A loop under a condition no lane meets costs lavapipe one pass of its body.
    if (REDUCTION_OPS_[k] == OP_SUM) {
        uint unplain = loading && vectors ? row_walk(k, totals, true, true, true, row_at, total)
                                          : row_walk(k, totals, true, loading, false, row_at, total);
        if (unplain != 0u) row_walk(k, totals, false, false, false, row_at, total);
        return floatBitsToUint(total);
    }
#endif
    if (loading && vectors) row_walk(k, totals, false, true, true, row_at, total);
    else row_walk(k, totals, false, loading, false, row_at, total);
    return floatBitsToUint(total);
}

// The element outputs of the row, from private_row and every total: with `vectors`, those in
// BLOCK_STORES a block of eight at a time.
void store_row(uint row_at[TENSOR_COUNT], uint totals[TOTAL_SLOTS], bool vectors) {
    uint offsets[TENSOR_COUNT];
    uint output_bits[OUTPUT_COUNT];
    REDUCE_VALUE no_term;
    uint element = 0u;
#if BLOCK_STORES != 0
    uint block_outputs[OUTPUT_COUNT][8];
    uint block_at[TENSOR_COUNT];
    for (; vectors && element + 8u <= REDUCED_COUNT; element += 8u) {
        [[unroll]] for (uint j = 0u; j < 8u; ++j) {
            element_offsets(row_at, element + j, element + j == 0u, offsets);
            if (j == 0u) block_at = offsets;
            element_math(private_row[element + j], totals, element + j, no_term, output_bits);
            [[unroll]] for (uint o = 0u; o < OUTPUT_COUNT; ++o) {
                if (((BLOCK_STORES >> o) & 1u) != 0u) block_outputs[o][j] = output_bits[o];
                else if (((ELEMENT_OUTPUTS >> o) & 1u) != 0u) output_store(o, offsets[INPUT_COUNT + o], output_bits[o]);
            }
        }
        [[unroll]] for (uint o = 0u; o < OUTPUT_COUNT; ++o) {
            if (((BLOCK_STORES >> o) & 1u) != 0u) store_block(o, block_at[INPUT_COUNT + o], block_outputs[o]);
        }
    }
#endif
    for (; element < REDUCED_COUNT; ++element) {
        element_offsets(row_at, element, element == 0u, offsets);
        element_math(private_row[element], totals, element, no_term, output_bits);
        [[unroll]] for (uint o = 0u; o < OUTPUT_COUNT; ++o) {
            if (((ELEMENT_OUTPUTS >> o) & 1u) != 0u) output_store(o, offsets[INPUT_COUNT + o], output_bits[o]);
        }
    }
}

// A whole row in one invocation: its inputs read once, as the first reduction walks them;
// every later reduction in order over the private copy; then the element outputs.
void run_row(uint row_at[TENSOR_COUNT], inout uint totals[TOTAL_SLOTS]) {
    bool vectors = false;
#if BLOCK_LOADS != 0 || BLOCK_STORES != 0
    vectors = vectors_aligned();
#endif
    row_reductions(totals, row_at, vectors);
#if ELEMENT_OUTPUTS != 0
    // Decided out here, as walk's: a condition inside the loops keeps both kinds of store.
    if (vectors) store_row(row_at, totals, true);
    else store_row(row_at, totals, false);
#endif
}
#endif

void main() {
    uint id = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * WORKGROUP_SIZE + gl_LocalInvocationID.x;
#if defined(STAGE_PARTIAL) || defined(FINAL_ELEMENTS)
    if (id >= ROW_GROUPS * CHUNK_COUNT) return;
    uint row = (id % ROW_GROUPS) * ROW_GROUP, chunk = id / ROW_GROUPS;
#else
    if (id >= ROW_COUNT) return;
    uint row = id, chunk = 0u;
#endif
    uint totals[ROW_GROUP][TOTAL_SLOTS];
    [[unroll]] for (uint g = 0u; g < ROW_GROUP; ++g) {
        [[unroll]] for (uint k = 0u; k < TOTAL_SLOTS; ++k) {
            totals[g][k] = k < TOTALS_KNOWN ? scratch[scratch_word(k * ROW_COUNT + row + g)] : 0u;
        }
    }
    uint row_at[TENSOR_COUNT];
    row_offsets(row, row_at);
    uint output_bits[OUTPUT_COUNT];
    start_reductions();
#if defined(STAGE_TOTAL)
    for (uint c = 0u; c < CHUNK_COUNT; ++c) {
#if defined(REDUCE_ARG)
        take_ranked(0u, scratch[scratch_word(RANKS_AT + c * ROW_COUNT + row)],
                    scratch[scratch_word(PARTIALS_AT + c * ROW_COUNT + row)]);
#else
        take_partial(c, scratch[scratch_word(PARTIALS_AT + c * ROW_COUNT + row)]);
#endif
    }
#elif defined(STAGE_ROW)
    run_row(row_at, totals[0]);
#elif defined(STAGE_PARTIAL) || defined(FINAL_ELEMENTS)
    uint first = chunk * CHUNK, end = min(first + CHUNK, REDUCED_COUNT);
#if defined(CHECKED_SUMS)
    if (walk(first, end, row_at, totals, true) != 0u) {
        start_reductions();
        walk(first, end, row_at, totals, false);
    }
#else
    walk(first, end, row_at, totals, false);
#endif
#endif
#if defined(STAGE_PARTIAL) || defined(STAGE_TOTAL)
    // A whole row's result is its total (and, for the last reduction, what row outputs read).
    [[unroll]] for (uint g = 0u; g < ROW_GROUP; ++g) {
        uint taken = taken_bits(g);
        scratch[scratch_word(WHOLE_ROW ? REDUCTION * ROW_COUNT + row + g : PARTIALS_AT + chunk * ROW_COUNT + row + g)] = taken;
#if defined(REDUCE_ARG)
        if (!WHOLE_ROW) scratch[scratch_word(RANKS_AT + chunk * ROW_COUNT + row + g)] = best_rank[g];
#endif
        if (REDUCTION < TOTAL_SLOTS) totals[g][REDUCTION] = taken;
    }
#endif
#if ROW_OUTPUTS != 0
    if (chunk == 0u) {
        [[unroll]] for (uint g = 0u; g < ROW_GROUP; ++g) {
            row_math(totals[g], output_bits);
            [[unroll]] for (uint o = 0u; o < OUTPUT_COUNT; ++o) {
                if (((ROW_OUTPUTS >> o) & 1u) == 0u) continue;
                // the group's rows are adjacent along the innermost kept dim
                uint at = row_at[INPUT_COUNT + o] + g * KEPT_STRIDES_[(KEPT_RANK - 1) * TENSOR_COUNT + INPUT_COUNT + o];
                if (((WIDE_OUTPUTS >> o) & 1u) != 0u) {  // words 2k and 2k + 1: the value, zero-extended
                    output_words(o, at, uvec2(output_bits[o], 0u));
                } else {
                    output_store(o, at, output_bits[o]);
                }
            }
        }
    }
#endif
}
