// The element-wise kernel family: output0 = op(input0, ..., input{INPUT_COUNT-1}) element by
// element, for 1 to 4 inputs, each of its own data type. The operator's math arrives as the
// generated header operator_body.glsl (rendered from its expression by dmlpy/ir/expr.py):
// statements over `bits[]`, the inputs' stored bits, ending in `uint result`, the output's
// stored bits. Element widths may differ between tensors only on PATH_MIXED, PATH_GATHER and
// PATH_STRIDED, where each input is read by its own width; words assembled whole are the
// output's (ELEMENT_BITS).
//
// One mechanism, five layouts chosen at compile time from the descs:
//   PATH_PACKED   all tensors share one dense layout, so nothing is indexed or shared: each
//                 invocation maps VECTORS_PER_ITEM units of VECTOR_WORDS whole words of every
//                 tensor (16-byte vector loads and stores when VECTOR_WORDS is 4), with no
//                 bounds check: only whole items. Its units are consecutive (a CPU device:
//                 one invocation is a SIMD lane, and a contiguous run is what it streams
//                 best) or a workgroup apart (UNITS_INTERLEAVED, a GPU: neighbouring
//                 invocations on neighbouring units, coalesced), or, where inputs repeat
//                 one period (PERIOD_UNITS, a CPU device), a period apart, so that an item
//                 reads each repeated input's vector once. The words past the last
//                 whole item are a second dispatch of the same shader (PACKED_TAIL), one word
//                 per invocation, lanes past the last element keeping their bits.
//   PATH_GATHER   the output is packed row-major: each invocation owns a run of output words
//                 and gathers their elements from the strided inputs.
//                 With INPUT_PERIOD(t) (dmlpy's "broadcast" path) an input may instead repeat
//                 one block of the output's layout (a row broadcast along the rows).
//   PATH_STRIDED  anything else: each invocation maps a run of elements; sub-word outputs are
//                 merged atomically (see tensor_storage.glsl). Where the output is contiguous
//                 along a dim the inputs are not (a transpose), COLUMN_RUN: each invocation
//                 walks a column of the output, neighbouring invocations neighbouring columns.
//   PATH_MIXED    as PATH_PACKED, but the tensors' elements differ in width (a condition, a
//                 comparison's output, a cast): each invocation maps MIXED_ELEMENTS elements,
//                 one 16-byte vector of the narrowest tensor, whole vectors of every other,
//                 every tensor starting on 16 bytes; the elements past the last whole item
//                 are a second dispatch (MIXED_TAIL), one element per invocation. An input in
//                 MIXED_SCALARS (bit t) is one value for every element (a scalar's zero
//                 strides): its element at its base, read once.
//   PATH_TILED    a 2-D transpose in whole 16-byte vectors (sizes and pitches multiples of
//                 TILE, a vector's elements; 16-byte starts): TILE x TILE blocks transposed
//                 in registers. Defines TILE_LANE_SIZE, TILE_RUN_SIZE (the sizes of the
//                 inputs' and the output's contiguous dims), INPUT_PITCH, OUTPUT_PITCH.
//
// Defines: ELEMENT_BITS and DTYPE_* (the output's), WORKGROUP_SIZE, one PATH_*,
// for PATH_PACKED: VECTOR_WORDS (1 or 4), VECTORS_PER_ITEM, UNITS_INTERLEAVED or not, and
// PACKED_TAIL in the tail's dispatch; for PATH_GATHER and PATH_STRIDED: RUN_LENGTH,
// RANK, SIZES and STRIDES (RANK groups of TENSOR_COUNT element strides: inputs, then the
// output), the descs' dims after merging contiguous ones (and reordering, on PATH_STRIDED),
// and COLUMN_RUN or not; INPUT_PERIOD(t) on the broadcast form of PATH_PACKED, with
// PERIOD_UNITS (the one period of every repeated input, in units) where an item's units lie a
// period apart rather than consecutive (a CPU device, 16-byte units); for PATH_MIXED:
// MIXED_ELEMENTS, MIXED_SCALARS, and MIXED_TAIL in the tail's dispatch; VECTOR_WORDS_64 where
// vectors move as two 64-bit words (kernel_interface.glsl). The element count is a push
// constant: a packed tensor in a buffer larger than one binding can cover is run as
// several windows of the same shader.
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

layout(local_size_x = WORKGROUP_SIZE) in;

// The bindings (inputs, then output0), their accessors (input_word, input_load,
// input_vector where VECTOR_WORDS is 4 or on PATH_TILED) and the Params block
// (params.base[], params.element_count, params.scalar_bits[]), generated from
// dmlpy/kernels/interface.py. Bases are whole words on PATH_PACKED, and for the output on
// PATH_GATHER (the planner checks the descs' guaranteed_base_offset_alignment).
#include "kernel_interface.glsl"

#if defined(PATH_PACKED)
#define UNIT_ELEMENTS (VECTOR_WORDS * ELEMENTS_PER_WORD)
#define ELEMENTS_PER_ITEM (VECTORS_PER_ITEM * UNIT_ELEMENTS)
// The main dispatch maps whole chunks: an item, with interleaved units a workgroup's items,
// with units a period apart VECTORS_PER_ITEM periods.
#if defined(PERIOD_UNITS)
#define CHUNK_ELEMENTS (ELEMENTS_PER_ITEM * PERIOD_UNITS)
#elif defined(UNITS_INTERLEAVED)
#define CHUNK_ELEMENTS (ELEMENTS_PER_ITEM * WORKGROUP_SIZE)
#else
#define CHUNK_ELEMENTS ELEMENTS_PER_ITEM
#endif
#elif defined(PATH_TILED)
#define TILE (4u * ELEMENTS_PER_WORD)  // elements in a 16-byte vector
#elif defined(PATH_MIXED)
#define ELEMENTS_PER_ITEM MIXED_ELEMENTS
#else
#define ELEMENTS_PER_ITEM RUN_LENGTH  // a multiple of ELEMENTS_PER_WORD on PATH_GATHER
#endif

uint ceil_div(uint a, uint b) {
    return a / b + (a % b != 0u ? 1u : 0u);  // no a + b - 1: a may be near 2^32
}

uint apply_op(uint bits[INPUT_COUNT]) {
#include "operator_body.glsl"
    return result;
}

// The first `lanes` elements of word w of every input, mapped into `result`'s lanes.
uint apply_word(uint words[INPUT_COUNT], uint result, uint lanes) {
    [[unroll]] for (uint lane = 0u; lane < ELEMENTS_PER_WORD; ++lane) {
        if (lane < lanes) {
            uint bits[INPUT_COUNT];
            [[unroll]] for (uint t = 0u; t < INPUT_COUNT; ++t) bits[t] = lane_bits(words[t], lane);
            result = with_lane_bits(result, lane, apply_op(bits));
        }
    }
    return result;
}

#if defined(PATH_PACKED)
#if defined(INPUT_PERIOD)
// INPUT_PERIOD(t): per input, 0, or the length P of the block it repeats: its element for the
// output's element at memory position m is at m % P (a compile-time constant, so % is cheap).
#define INPUT_INDEX(t, index, elements) \
    (INPUT_PERIOD(t) == 0u ? (index) : (index) % max(INPUT_PERIOD(t) / (elements), 1u))
// A period of 1 is one value (a scalar, of any alignment): read as its element, repeated in
// every lane of a word, so the vector and word forms need no whole words of it.
#define INPUT_UNIFORM(t) (INPUT_PERIOD(t) == 1u)
#else
#define INPUT_INDEX(t, index, elements) (index)
#define INPUT_UNIFORM(t) false
#endif

// Input t's word at word index w, or its one value repeated across a word's lanes.
uint packed_input_word(uint t, uint w) {
    if (INPUT_UNIFORM(t))
        return input_load(t, params.base[t]) * (0xFFFFFFFFu / ELEMENT_MASK);
    return input_word(t, params.base[t] / ELEMENTS_PER_WORD + INPUT_INDEX(t, w, ELEMENTS_PER_WORD));
}

#if VECTOR_WORDS == 4
// Input t's vector of unit u of this dispatch's window.
uvec4 unit_vector(uint t, uint u) {
    return INPUT_UNIFORM(t) ? uvec4(packed_input_word(t, 0u))
                            : input_vector(t, params.base[t] / UNIT_ELEMENTS + INPUT_INDEX(t, u, UNIT_ELEMENTS));
}

// Unit u, given every input's vector of it.
void map_vectors(uint u, uvec4 vectors[INPUT_COUNT]) {
    uint words[INPUT_COUNT];
    uvec4 result;
    [[unroll]] for (uint k = 0u; k < 4u; ++k) {
        [[unroll]] for (uint t = 0u; t < INPUT_COUNT; ++t) words[t] = vectors[t][k];
        result[k] = apply_word(words, 0u, ELEMENTS_PER_WORD);
    }
    output_vector_store(0u, params.base[INPUT_COUNT] / UNIT_ELEMENTS + u, result);
}
#endif

// Unit u of this dispatch's window: VECTOR_WORDS whole words of every tensor.
void map_unit(uint u) {
#if VECTOR_WORDS == 4
    uvec4 vectors[INPUT_COUNT];
    [[unroll]] for (uint t = 0u; t < INPUT_COUNT; ++t) vectors[t] = unit_vector(t, u);
    map_vectors(u, vectors);
#else
    uint words[INPUT_COUNT];
    [[unroll]] for (uint t = 0u; t < INPUT_COUNT; ++t) words[t] = packed_input_word(t, u);
    output0[params.base[INPUT_COUNT] / ELEMENTS_PER_WORD + u] = apply_word(words, 0u, ELEMENTS_PER_WORD);
#endif
}
#elif defined(PATH_MIXED)
// Item `item`: elements [item * MIXED_ELEMENTS, + MIXED_ELEMENTS), whole 16-byte vectors of
// every tensor (one of the narrowest; on a CPU device several beside a one-value input, whose
// element is loaded once an item), each element's bits taken from its tensor's words by that
// tensor's own width. Vectors alone, no branch on a tensor's width: with a word path beside
// them lavapipe ran twice as slowly. Each vector is loaded where its first element is reached
// and the output's stored once its last is done, so only one vector of each tensor is live
// (all of them at once overflowed a CPU device's registers).
void map_mixed_item(uint item) {
    uvec4 vectors[INPUT_COUNT];
    uint scalar_bits[INPUT_COUNT];
    [[unroll]] for (uint t = 0u; t < INPUT_COUNT; ++t) {
        if (((MIXED_SCALARS >> t) & 1u) != 0u) scalar_bits[t] = input_load(t, params.base[t]);
    }
    const uint OUTPUT_VECTOR_ELEMENTS = 128u / ELEMENT_BITS;
    uvec4 results;
    [[unroll]] for (uint e = 0u; e < MIXED_ELEMENTS; ++e) {
        uint bits[INPUT_COUNT];
        [[unroll]] for (uint t = 0u; t < INPUT_COUNT; ++t) {
            if (((MIXED_SCALARS >> t) & 1u) != 0u) {
                bits[t] = scalar_bits[t];
                continue;
            }
            uint vector_elements = 128u / input_element_bits(t), per_word = 32u / input_element_bits(t);
            if (e % vector_elements == 0u) {
                vectors[t] = input_vector(t, params.base[t] * input_element_bits(t) / 128u
                                                 + (item * MIXED_ELEMENTS + e) / vector_elements);
            }
            uint in_vector = e % vector_elements;
            bits[t] = sized_lane_bits(vectors[t][in_vector / per_word], in_vector % per_word, input_element_bits(t));
        }
        uint in_output = e % OUTPUT_VECTOR_ELEMENTS, word = in_output / ELEMENTS_PER_WORD, lane = e % ELEMENTS_PER_WORD;
        results[word] = with_lane_bits(lane == 0u ? 0u : results[word], lane, apply_op(bits));
        if (in_output == OUTPUT_VECTOR_ELEMENTS - 1u) {
            output_vector_store(0u, params.base[INPUT_COUNT] * ELEMENT_BITS / 128u
                                        + (item * MIXED_ELEMENTS + e) / OUTPUT_VECTOR_ELEMENTS, results);
        }
    }
}
#elif !defined(PATH_TILED)
const uint TENSOR_SIZES[RANK] = uint[RANK](SIZES);
const uint TENSOR_STRIDES[RANK * TENSOR_COUNT] = uint[RANK * TENSOR_COUNT](STRIDES);

// Element offsets of logical element e (row-major over SIZES) in every tensor.
void element_offsets(uint e, out uint offsets[TENSOR_COUNT]) {
    [[unroll]] for (uint t = 0u; t < TENSOR_COUNT; ++t) offsets[t] = 0u;
    [[unroll]] for (int d = RANK - 1; d >= 0; --d) {
        uint index = e % TENSOR_SIZES[d];
        [[unroll]] for (uint t = 0u; t < TENSOR_COUNT; ++t) offsets[t] += index * TENSOR_STRIDES[d * TENSOR_COUNT + t];
        e /= TENSOR_SIZES[d];
    }
}

// The offsets of element e, given those of element e - 1: one step along the innermost
// dim, or computed afresh where e starts a new row.
void next_offsets(inout uint offsets[TENSOR_COUNT], uint e) {
    if (e % TENSOR_SIZES[RANK - 1] == 0u) {
        element_offsets(e, offsets);
    } else {
        [[unroll]] for (uint t = 0u; t < TENSOR_COUNT; ++t) offsets[t] += TENSOR_STRIDES[(RANK - 1) * TENSOR_COUNT + t];
    }
}

uint apply_at(uint offsets[TENSOR_COUNT]) {
    uint bits[INPUT_COUNT];
    [[unroll]] for (uint t = 0u; t < INPUT_COUNT; ++t) bits[t] = input_load(t, params.base[t] + offsets[t]);
    return apply_op(bits);
}
#endif

void main() {
    // A 2-D grid reaches past maxComputeWorkGroupCount[0]; the groups past the last one
    // needed idle, before `item` could wrap around 2^32.
#if defined(PACKED_TAIL)
    uint whole_elements = params.element_count / CHUNK_ELEMENTS * CHUNK_ELEMENTS;
    uint item_count = ceil_div(params.element_count - whole_elements, ELEMENTS_PER_WORD);
#elif defined(PATH_PACKED)
    uint item_count = params.element_count / CHUNK_ELEMENTS * (CHUNK_ELEMENTS / ELEMENTS_PER_ITEM);
#elif defined(MIXED_TAIL)
    uint item_count = params.element_count % MIXED_ELEMENTS;
#elif defined(PATH_MIXED)
    uint item_count = params.element_count / MIXED_ELEMENTS;
#elif defined(PATH_TILED)
    uint item_count = TILE_LANE_SIZE / TILE * (TILE_RUN_SIZE / TILE);
#elif defined(COLUMN_RUN)
    uint runs_per_column = ceil_div(TENSOR_SIZES[RANK - 1], RUN_LENGTH);
    uint item_count = params.element_count / TENSOR_SIZES[RANK - 1] * runs_per_column;
#else
    uint item_count = ceil_div(params.element_count, ELEMENTS_PER_ITEM);
#endif
    uint group = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (group >= ceil_div(item_count, WORKGROUP_SIZE)) return;
    uint item = group * WORKGROUP_SIZE + gl_LocalInvocationID.x;
    if (item >= item_count) return;

#if defined(PATH_TILED)
    // A block of TILE x TILE elements: TILE vectors along the inputs' contiguous dim (one per
    // step along the output's), transposed in registers into TILE vectors along the
    // output's, each element merged into its word in a register. Neighbouring invocations
    // take neighbouring blocks along the output's dim, so their stores fill whole rows of
    // the output (on lavapipe 1.1-1.2x faster than along the inputs' dim, tools/bench.py).
    uint run_first = item % (TILE_RUN_SIZE / TILE) * TILE, lane_first = item / (TILE_RUN_SIZE / TILE) * TILE;
    uvec4 vectors[INPUT_COUNT][TILE];
    [[unroll]] for (uint t = 0u; t < INPUT_COUNT; ++t) {
        [[unroll]] for (uint j = 0u; j < TILE; ++j)
            vectors[t][j] = input_vector(t, (params.base[t] + lane_first + (run_first + j) * INPUT_PITCH) / TILE);
    }
    [[unroll]] for (uint k = 0u; k < TILE; ++k) {
        uvec4 result;
        [[unroll]] for (uint w = 0u; w < 4u; ++w) {
            uint word = 0u;
            [[unroll]] for (uint l = 0u; l < ELEMENTS_PER_WORD; ++l) {
                uint bits[INPUT_COUNT];
                [[unroll]] for (uint t = 0u; t < INPUT_COUNT; ++t)
                    bits[t] = lane_bits(vectors[t][w * ELEMENTS_PER_WORD + l][k / ELEMENTS_PER_WORD],
                                        k % ELEMENTS_PER_WORD);
                word = with_lane_bits(word, l, apply_op(bits));
            }
            result[w] = word;
        }
        output_vector_store(0u, (params.base[INPUT_COUNT] + (lane_first + k) * OUTPUT_PITCH + run_first) / TILE, result);
    }
#elif defined(COLUMN_RUN)
    // Neighbouring invocations step along the second-to-last dim (where the inputs are
    // contiguous); each walks RUN_LENGTH elements along the last (where the output is).
    uint lane = item % TENSOR_SIZES[RANK - 2], rest = item / TENSOR_SIZES[RANK - 2];
    uint run_first = rest % runs_per_column * RUN_LENGTH;
    uint first = ((rest / runs_per_column) * TENSOR_SIZES[RANK - 2] + lane) * TENSOR_SIZES[RANK - 1] + run_first;
    uint offsets[TENSOR_COUNT];
    element_offsets(first, offsets);
    for (uint r = run_first; r < min(run_first + RUN_LENGTH, TENSOR_SIZES[RANK - 1]); ++r) {
        if (r > run_first) {
            [[unroll]] for (uint t = 0u; t < TENSOR_COUNT; ++t) offsets[t] += TENSOR_STRIDES[(RANK - 1) * TENSOR_COUNT + t];
        }
        output0_store(params.base[INPUT_COUNT] + offsets[INPUT_COUNT], apply_at(offsets));
    }
#elif defined(PATH_STRIDED)
    // A run of RUN_LENGTH consecutive elements, offsets stepped from one to the next.
    uint first = item * RUN_LENGTH;
    uint offsets[TENSOR_COUNT];
    element_offsets(first, offsets);
    for (uint e = first; e < min(first + RUN_LENGTH, params.element_count); ++e) {
        if (e > first) next_offsets(offsets, e);
        output0_store(params.base[INPUT_COUNT] + offsets[INPUT_COUNT], apply_at(offsets));
    }
#elif defined(PACKED_TAIL)
    // Word w past the whole items; in the tensor's last word the lanes past its end keep
    // their bits.
    uint w = whole_elements / ELEMENTS_PER_WORD + item;
    uint lanes = min(ELEMENTS_PER_WORD, params.element_count - w * ELEMENTS_PER_WORD);
    uint out_word = params.base[INPUT_COUNT] / ELEMENTS_PER_WORD + w;
    uint words[INPUT_COUNT];
    [[unroll]] for (uint t = 0u; t < INPUT_COUNT; ++t) words[t] = packed_input_word(t, w);
    output0[out_word] = apply_word(words, lanes < ELEMENTS_PER_WORD ? output0[out_word] : 0u, lanes);
#elif defined(MIXED_TAIL)
    // An element past the whole items, alone (its word's other elements are the tail's too).
    uint e = params.element_count - item_count + item;
    uint bits[INPUT_COUNT];
    [[unroll]] for (uint t = 0u; t < INPUT_COUNT; ++t) {
        bits[t] = input_load(t, params.base[t] + (((MIXED_SCALARS >> t) & 1u) != 0u ? 0u : e));
    }
    output0_store(params.base[INPUT_COUNT] + e, apply_op(bits));
#elif defined(PATH_MIXED)
    map_mixed_item(item);
#elif defined(PATH_PACKED) && defined(PERIOD_UNITS)
    // The item's units lie a period apart, in VECTORS_PER_ITEM consecutive periods, so each
    // repeated input's vector is read once for all of them; neighbouring invocations take
    // neighbouring units of the period.
    uint first = item / PERIOD_UNITS * (VECTORS_PER_ITEM * PERIOD_UNITS) + item % PERIOD_UNITS;
    uvec4 vectors[INPUT_COUNT];
    [[unroll]] for (uint t = 0u; t < INPUT_COUNT; ++t) {
        if (INPUT_PERIOD(t) != 0u) vectors[t] = unit_vector(t, first);
    }
    [[unroll]] for (uint k = 0u; k < VECTORS_PER_ITEM; ++k) {
        [[unroll]] for (uint t = 0u; t < INPUT_COUNT; ++t) {
            if (INPUT_PERIOD(t) == 0u) vectors[t] = unit_vector(t, first + k * PERIOD_UNITS);
        }
        map_vectors(first + k * PERIOD_UNITS, vectors);
    }
#elif defined(PATH_PACKED)
    [[unroll]] for (uint k = 0u; k < VECTORS_PER_ITEM; ++k) {
#if defined(UNITS_INTERLEAVED)
        map_unit((group * VECTORS_PER_ITEM + k) * WORKGROUP_SIZE + gl_LocalInvocationID.x);
#else
        map_unit(item * VECTORS_PER_ITEM + k);
#endif
    }
#else
    // A run of whole output words, each assembled from gathered elements; in the tensor's
    // last word the lanes past its end keep their bits.
    uint first = item * RUN_LENGTH;
    uint end = min(first + RUN_LENGTH, params.element_count);
    uint offsets[TENSOR_COUNT];
    element_offsets(first, offsets);
    for (uint word_first = first; word_first < end; word_first += ELEMENTS_PER_WORD) {
        uint lanes = min(ELEMENTS_PER_WORD, end - word_first);
        uint out_index = (params.base[INPUT_COUNT] + word_first) / ELEMENTS_PER_WORD;
        uint result = lanes < ELEMENTS_PER_WORD ? output0[out_index] : 0u;
        [[unroll]] for (uint lane = 0u; lane < ELEMENTS_PER_WORD; ++lane) {
            uint e = word_first + lane;
            if (lane < lanes) {
                if (e > first) next_offsets(offsets, e);
                result = with_lane_bits(result, lane, apply_at(offsets));
            }
        }
        output0[out_index] = result;
    }
#endif
}
