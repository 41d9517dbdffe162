#version 450
// The matrix-product kernel family (GEMM, MATRIX_MULTIPLY_INTEGER): for each of BATCH_COUNT
// products, output[m][n] = gemm_epilogue(S, ...) with S the sum of a_value(A[m][k]) *
// b_value(B[k][n]) over k. S starts at -0 and takes the products in increasing k, each product
// and each sum rounded to FP32 on its own (`precise`: never an FMA), so its bits depend on the
// values alone: not on the tile shape, the workgroup size or the device
// (dmlpy/kernels/matmul.py). INTEGER_PRODUCT: values are ints (less their row's or column's
// zero point, A_ZERO_INPUT and B_ZERO_INPUT where defined) and S wraps in 32 bits, exactly.
//
// Generated headers: kernel_interface.glsl (bindings: the product's inputs, A at A_INPUT and
// B at B_INPUT, then the epilogue's inputs from EPILOGUE_FIRST, the output, and the scratch
// where EXACTNESS_KEYS; input_load, output_store, params) and gemm_body.glsl: VALUE (float or
// int) and SUM_START (-0 or 0), a_value(e) and b_value(e) (an element of A or B as a VALUE),
// a_zero(m) and b_zero(n) (the zero points of row m and column n), sum_bits(S) (the sum's
// stored bits: a NaN as the canonical quiet NaN, since which NaN the hardware passes on is
// its own),
// gemm_epilogue(bits) (the stored bits of the output element from bits[0], S's FP32 bits, and
// bits[1 + t], the element at (m, n) of epilogue input t: GEMM's C, or a tensor an
// element-wise chain fused into the store reads).
//
// Two stages where the device may flush subnormals (EXACTNESS_KEYS):
//   STAGE_KEYS     for each row of A and column of B of each product, the smallest nonzero
//                  magnitude along K, as its bits minus one (a zero's wraps to the largest and
//                  drops out), into the scratch: BATCH_COUNT * (M + N) words. An invocation
//                  takes a line, or four where they are contiguous across (one 16-byte load a k).
//   STAGE_PRODUCT  one workgroup per BLOCK_M x BLOCK_N outputs, invocations along N, each with
//                  TILE_M x TILE_N accumulators (rows m0 + i; columns in runs of COLUMN_RUN,
//                  LANES_N * COLUMN_RUN apart). Where
//                  its rows' and columns' keys prove every product and partial sum a normal
//                  number or zero, the hardware's operations; else dmlpy's exact ones.
//
// Defines: DTYPE_* and ELEMENT_BITS (the output's), WORKGROUP_SIZE, M, N, K, K_STEP, A_INPUT,
// B_INPUT, EPILOGUE_FIRST, A_STRIDES and B_STRIDES (element strides along the rows and columns
// of A and B as read, transposes applied), EPILOGUE_TENSORS and EPILOGUE_STRIDES (rows,
// columns of each), OUTPUT_STRIDES, BATCH_COUNT, BATCH_RANK, BATCH_SIZES, BATCH_STRIDES (per
// batch dim, one per tensor in binding order), INTEGER_PRODUCT, EXACTNESS_KEYS, VECTOR_VIEWS
// (and VECTOR_WORDS_64: vectors move as two 64-bit words),
// A_VECTORS_ALONG_K or _M, B_VECTORS_ALONG_N or _K, A_VECTOR_ELEMENTS and B_VECTOR_ELEMENTS (4,
// or 8 for 16-bit types where lanes share their rows), one of STAGE_KEYS and STAGE_PRODUCT; for
// STAGE_PRODUCT: LANES_N, TILE_M, TILE_N, BLOCK_M, BLOCK_N, COLUMN_RUN, and SHARED_ROWS with
// SHARED_LANES where a subgroup's lanes share their rows (below).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#if defined(SHARED_ROWS)
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#if defined(EXACTNESS_KEYS)
#extension GL_KHR_shader_subgroup_vote : require
#endif
#endif
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

#include "kernel_interface.glsl"
#include "gemm_body.glsl"

#define OUTPUT_BASE (EPILOGUE_FIRST + EPILOGUE_TENSORS)
#define SCRATCH_BASE (OUTPUT_BASE + 1)

const uint A_STRIDES_[2] = uint[2](A_STRIDES);
const uint B_STRIDES_[2] = uint[2](B_STRIDES);
#if EPILOGUE_TENSORS > 0
const uint EPILOGUE_STRIDES_[2 * EPILOGUE_TENSORS] = uint[2 * EPILOGUE_TENSORS](EPILOGUE_STRIDES);
#endif
const uint OUTPUT_STRIDES_[2] = uint[2](OUTPUT_STRIDES);

// Where product `batch` starts in each tensor (binding order), in elements.
uint batch_offset(uint batch, int tensor) {
    uint at = 0u;
#if BATCH_RANK > 0
    const uint sizes[BATCH_RANK] = uint[BATCH_RANK](BATCH_SIZES);
    const uint strides[BATCH_RANK * TENSOR_COUNT] = uint[BATCH_RANK * TENSOR_COUNT](BATCH_STRIDES);
    [[unroll]] for (int d = BATCH_RANK - 1; d >= 0; --d) {
        at += (batch % sizes[d]) * strides[d * TENSOR_COUNT + tensor];
        batch /= sizes[d];
    }
#endif
    return at;
}

// |x|'s bits minus one: the smallest nonzero magnitude has the smallest key, a zero the largest.
uint magnitude_key(float x) {
    return (floatBitsToUint(x) & 0x7FFFFFFFu) - 1u;
}

#if defined(STAGE_KEYS)
// A line's smallest key along K: the line starts at `start`, k steps `step` elements apart;
// where the line is contiguous (`vectors`), four k to a 16-byte load.
uint line_key(uint start, uint step, bool vectors, bool row) {
    uint smallest = 0xFFFFFFFFu;
    uint k = 0u;
#if defined(VECTOR_VIEWS)
    if (vectors) {
        for (; k + 4u <= K; k += 4u) {
            uvec4 v = input_vector(row ? A_INPUT : B_INPUT, (start + k) >> 2);
            uvec4 keys = (v & 0x7FFFFFFFu) - 1u;
            smallest = min(smallest, min(min(keys.x, keys.y), min(keys.z, keys.w)));
        }
    }
#endif
    for (; k + K_STEP <= K; k += K_STEP) {
        [[unroll]] for (uint s = 0u; s < K_STEP; ++s) {
            uint e = start + (k + s) * step;
            smallest = min(smallest, magnitude_key(row ? a_value(e) : b_value(e)));
        }
    }
    for (; k < K; ++k) {
        uint e = start + k * step;
        smallest = min(smallest, magnitude_key(row ? a_value(e) : b_value(e)));
    }
    return smallest;
}

#if defined(VECTOR_VIEWS)
// Four neighbouring lines' keys at once, where they are contiguous across (A's rows along M,
// B's columns along N): one 16-byte load a k.
uvec4 four_line_keys(uint start, uint step, bool row) {
    uvec4 smallest = uvec4(0xFFFFFFFFu);
    uint k = 0u;
    for (; k + K_STEP <= K; k += K_STEP) {
        [[unroll]] for (uint s = 0u; s < K_STEP; ++s)
            smallest = min(smallest, (input_vector(row ? A_INPUT : B_INPUT, (start + (k + s) * step) >> 2)
                                      & 0x7FFFFFFFu) - 1u);
    }
    for (; k < K; ++k)
        smallest = min(smallest, (input_vector(row ? A_INPUT : B_INPUT, (start + k * step) >> 2) & 0x7FFFFFFFu) - 1u);
    return smallest;
}
#endif

#if defined(A_VECTORS_ALONG_M)
#define A_LINES_AN_ITEM 4u
#else
#define A_LINES_AN_ITEM 1u
#endif
#if defined(B_VECTORS_ALONG_N)
#define B_LINES_AN_ITEM 4u
#else
#define B_LINES_AN_ITEM 1u
#endif

void main() {
    const uint a_items = M / A_LINES_AN_ITEM, items = a_items + N / B_LINES_AN_ITEM;
    uint item = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * WORKGROUP_SIZE + gl_LocalInvocationID.x;
    if (item >= BATCH_COUNT * items) return;
    uint batch = item / items;
    uint within = item % items;
    bool row = within < a_items;
    uint line = row ? within * A_LINES_AN_ITEM : M + (within - a_items) * B_LINES_AN_ITEM;
    uint start = row ? params.base[A_INPUT] + batch_offset(batch, A_INPUT) + line * A_STRIDES_[0]
                     : params.base[B_INPUT] + batch_offset(batch, B_INPUT) + (line - M) * B_STRIDES_[1];
    uint step = row ? A_STRIDES_[1] : B_STRIDES_[0];
    uint keys_at = params.base[SCRATCH_BASE] + batch * (M + N) + line;
#if defined(VECTOR_VIEWS)
    if ((row ? A_LINES_AN_ITEM : B_LINES_AN_ITEM) == 4u) {
        uvec4 keys = four_line_keys(start, step, row);
        [[unroll]] for (int l = 0; l < 4; ++l) scratch[keys_at + uint(l)] = keys[l];
        return;
    }
#endif
#if defined(A_VECTORS_ALONG_K)
    bool a_vectors = true;
#else
    bool a_vectors = false;
#endif
#if defined(B_VECTORS_ALONG_K)
    bool b_vectors = true;
#else
    bool b_vectors = false;
#endif
    scratch[keys_at] = line_key(start, step, row ? a_vectors : b_vectors, row);
}
#endif

#if defined(STAGE_PRODUCT)
// The biased exponent of the smallest nonzero magnitude a key stands for: 1000 for no nonzero
// value at all, -1000 for a subnormal (nothing may meet it but zeros).
int key_exponent(uint key) {
    if (key == 0xFFFFFFFFu) return 1000;
    uint biased = (key + 1u) >> 23;
    return biased == 0u ? -1000 : int(biased);
}

// Every product of values at least these magnitudes is 2^-102 or more (biased exponents adding
// to 152): a normal multiple of 2^-125, as is every sum of them, so the hardware's operations
// meet no subnormal operand or result.
bool products_stay_normal(uint key_a, uint key_b) {
    return key_exponent(key_a) + key_exponent(key_b) >= 152;
}

float exact_product_sum(float sum, float a, float b) {
    return dml_add(sum, dml_mul(a, b));
}

float hardware_product_sum(float sum, float a, float b) {
    return dml_hardware_add(sum, dml_hardware_mul(a, b));
}

int wrapping_product_sum(int sum, int a, int b) {
    return sum + a * b;  // SPIR-V's integer arithmetic wraps
}

#if defined(INTEGER_PRODUCT)
#define PRODUCT_SUM wrapping_product_sum
#define LESS_ZERO(x, zero) ((x) - (zero))
#else
#define PRODUCT_SUM hardware_product_sum
#define LESS_ZERO(x, zero) (x)  // floats have no zero point (and a subtraction could flush a subnormal)
#endif

// One k of every accumulator, reading TILE_M values of A and TILE_N of B element by element.
#define GEMM_STEP(COMBINE, KK)                                                                 \
    {                                                                                          \
        VALUE a_[TILE_M];                                                                      \
        VALUE b_[TILE_N];                                                                      \
        [[unroll]] for (int i = 0; i < TILE_M; ++i) a_[i] = LESS_ZERO(a_value(a_at[i] + (KK) * A_STRIDES_[1]), a_zeros[i]); \
        [[unroll]] for (int j = 0; j < TILE_N; ++j) b_[j] = LESS_ZERO(b_value(b_at[j] + (KK) * B_STRIDES_[0]), b_zeros[j]); \
        [[unroll]] for (int i = 0; i < TILE_M; ++i)                                            \
            [[unroll]] for (int j = 0; j < TILE_N; ++j)                                        \
                acc[i][j] = COMBINE(acc[i][j], a_[i], b_[j]);                                  \
    }

// K_STEP (4) values of k at once: A's TILE_M x 4 block and B's 4 x TILE_N block, as 16-byte
// vectors along whichever dim the operand is contiguous in (A_VECTORS_ALONG_K or _M,
// B_VECTORS_ALONG_N or _K: FP32, aligned, that dim a multiple of 4), else element by element;
// then the products in increasing k, as GEMM_STEP takes them.
#define GEMM_BLOCK_STEP(COMBINE, KK)                                                           \
    {                                                                                          \
        VALUE a_[TILE_M][4];                                                                   \
        VALUE b_[4][TILE_N];                                                                   \
        LOAD_A_BLOCK(KK)                                                                       \
        LOAD_B_BLOCK(KK)                                                                       \
        [[unroll]] for (int s = 0; s < 4; ++s)                                                 \
            [[unroll]] for (int i = 0; i < TILE_M; ++i)                                        \
                [[unroll]] for (int j = 0; j < TILE_N; ++j)                                    \
                    acc[i][j] = COMBINE(acc[i][j], a_[i][s], b_[s][j]);                        \
    }

#if defined(A_VECTORS_ALONG_K)
#define LOAD_A_BLOCK(KK) [[unroll]] for (int i = 0; i < TILE_M; ++i) {                         \
        uvec4 v = input_vector(A_INPUT, (a_at[i] + (KK)) >> 2);                                \
        [[unroll]] for (int s = 0; s < 4; ++s) a_[i][s] = uintBitsToFloat(v[s]); }
#elif defined(A_VECTORS_ALONG_M)
#define LOAD_A_BLOCK(KK) [[unroll]] for (int s = 0; s < 4; ++s) {                              \
        uvec4 v = input_vector(A_INPUT, (a_at[0] + ((KK) + uint(s)) * A_STRIDES_[1]) >> 2);    \
        [[unroll]] for (int i = 0; i < TILE_M; ++i) a_[i][s] = uintBitsToFloat(v[i]); }
#else
#define LOAD_A_BLOCK(KK) [[unroll]] for (int s = 0; s < 4; ++s)                                \
        [[unroll]] for (int i = 0; i < TILE_M; ++i)                                            \
            a_[i][s] = LESS_ZERO(a_value(a_at[i] + ((KK) + uint(s)) * A_STRIDES_[1]), a_zeros[i]);
#endif
#if defined(B_VECTORS_ALONG_N)
#define LOAD_B_BLOCK(KK) [[unroll]] for (int s = 0; s < 4; ++s) {                              \
        uvec4 v = input_vector(B_INPUT, (b_at[0] + ((KK) + uint(s)) * B_STRIDES_[0]) >> 2);    \
        [[unroll]] for (int j = 0; j < TILE_N; ++j) b_[s][j] = uintBitsToFloat(v[j]); }
#elif defined(B_VECTORS_ALONG_K)
#define LOAD_B_BLOCK(KK) [[unroll]] for (int j = 0; j < TILE_N; ++j) {                         \
        uvec4 v = input_vector(B_INPUT, (b_at[j] + (KK)) >> 2);                                \
        [[unroll]] for (int s = 0; s < 4; ++s) b_[s][j] = uintBitsToFloat(v[s]); }
#else
#define LOAD_B_BLOCK(KK) [[unroll]] for (int s = 0; s < 4; ++s)                                \
        [[unroll]] for (int j = 0; j < TILE_N; ++j)                                            \
            b_[s][j] = LESS_ZERO(b_value(b_at[j] + ((KK) + uint(s)) * B_STRIDES_[0]), b_zeros[j]);
#endif

#define GEMM_LOOP(COMBINE)                                                                     \
    {                                                                                          \
        uint k = 0u;                                                                           \
        for (; k + 4u <= K; k += 4u) GEMM_BLOCK_STEP(COMBINE, k)                               \
        for (; k < K; ++k) GEMM_STEP(COMBINE, k)                                               \
    }

#if defined(SHARED_ROWS)
// SHARED_ROWS: a workgroup is one subgroup of SHARED_LANES lanes (a CPU device's SIMD lanes)
// that share their TILE_M rows, each lane with its own run of TILE_N columns. Each value of A
// is loaded by one lane and shuffled to the others: A's loads fall SHARED_LANES-fold, and the
// tile's rows can grow until B's loads are most of the memory traffic. A chunk takes
// SHARED_LANES values of k:
//   A_SHARE  the lane's share of A's TILE_M x SHARED_LANES block: share[r][x] is, with
//            A_VECTORS_ALONG_M, A[row m0 + SHARED_LANES r + x][k + lane] (whole vectors of the
//            row of A^T at k + lane); otherwise A[row m0 + SHARED_LANES r + lane][k + x].
//   B_CHUNK  the lane's own SHARED_LANES x TILE_N block of B, b_[kk][j] = B[k + kk][its column j].
//   then, lane by lane (a shuffle from a constant lane), each value of the share in turn
//   meets the lane's columns; every accumulator still sees its products in increasing k.
#define SHARED_GROUPS (TILE_M / SHARED_LANES)

// Element c of a 16-byte vector of ELEMENTS elements (4 of 32 bits, or 8 of 16), as bits.
#define VECTOR_ELEMENT(v, c, ELEMENTS)                                                         \
    ((ELEMENTS) == 4u ? (v)[c] : ((v)[(c) / 2] >> (16 * ((c) % 2))) & 0xFFFFu)

// COUNT elements into DEST[x] through VALUE_OF (a_bits_value or b_bits_value), whole vectors:
// vector q starts at element offset AT_Q (an expression of q).
#define LOAD_RUN(DEST, COUNT, INPUT, ELEMENTS, AT_Q, VALUE_OF)                                   \
    [[unroll]] for (int q = 0; q < (COUNT) / int(ELEMENTS); ++q) {                             \
        uvec4 v = input_vector(INPUT, (AT_Q) / (ELEMENTS));                                   \
        [[unroll]] for (int c = 0; c < int(ELEMENTS); ++c)                                    \
            DEST[int(ELEMENTS) * q + c] = VALUE_OF(VECTOR_ELEMENT(v, c, ELEMENTS)); }

#if defined(A_VECTORS_ALONG_M)
#define SHARED_ROW(r, x, L) (SHARED_LANES * (r) + (x))
#define SHARED_K(x, L) (L)
#define A_SHARE(KK) [[unroll]] for (int r = 0; r < SHARED_GROUPS; ++r)                          \
        LOAD_RUN(share[r], SHARED_LANES, A_INPUT, A_VECTOR_ELEMENTS, a_start + ((KK) + lane) * A_STRIDES_[1]  \
                 + row_read(m0 + uint(SHARED_LANES * r) + A_VECTOR_ELEMENTS * uint(q)) * A_STRIDES_[0], a_bits_value)
#else
#define SHARED_ROW(r, x, L) (SHARED_LANES * (r) + (L))
#define SHARED_K(x, L) (x)
#if defined(A_VECTORS_ALONG_K)
#define A_SHARE(KK) [[unroll]] for (int r = 0; r < SHARED_GROUPS; ++r)                          \
        LOAD_RUN(share[r], SHARED_LANES, A_INPUT, A_VECTOR_ELEMENTS,                                         \
                 a_start + row_read(m0 + uint(SHARED_LANES * r) + lane) * A_STRIDES_[0] + (KK)       \
                 + A_VECTOR_ELEMENTS * uint(q), a_bits_value)
#else
#define A_SHARE(KK) [[unroll]] for (int r = 0; r < SHARED_GROUPS; ++r)                          \
        [[unroll]] for (int x = 0; x < SHARED_LANES; ++x)                                      \
            share[r][x] = a_value(a_start + row_read(m0 + uint(SHARED_LANES * r) + lane) * A_STRIDES_[0] \
                                  + ((KK) + uint(x)) * A_STRIDES_[1]);
#endif
#endif

#if defined(B_VECTORS_ALONG_N)
#define B_CHUNK(KK) [[unroll]] for (int kk = 0; kk < SHARED_LANES; ++kk)                         \
        LOAD_RUN(b_[kk], TILE_N, B_INPUT, B_VECTOR_ELEMENTS,                                   \
                 b_at[int(B_VECTOR_ELEMENTS) * q] + ((KK) + uint(kk)) * B_STRIDES_[0], b_bits_value)
#elif defined(B_VECTORS_ALONG_K)
#define B_CHUNK(KK) [[unroll]] for (int j = 0; j < TILE_N; ++j) {                                \
        VALUE run_[SHARED_LANES];                                                              \
        LOAD_RUN(run_, SHARED_LANES, B_INPUT, B_VECTOR_ELEMENTS, b_at[j] + (KK) + B_VECTOR_ELEMENTS * uint(q), b_bits_value) \
        [[unroll]] for (int kk = 0; kk < SHARED_LANES; ++kk) b_[kk][j] = run_[kk]; }
#else
#define B_CHUNK(KK) [[unroll]] for (int kk = 0; kk < SHARED_LANES; ++kk)                         \
        [[unroll]] for (int j = 0; j < TILE_N; ++j)                                            \
            b_[kk][j] = b_value(b_at[j] + ((KK) + uint(kk)) * B_STRIDES_[0]);
#endif

// The values lane L shared, each with the columns of every lane. A shuffle from a constant lane,
// not subgroupBroadcast: llvmpipe runs a loop over the lanes for each broadcast (it reads the
// lane index from the first active one), where a shuffle from a constant lane is one permute.
#define SHARED_LANE(L)                                                                         \
    [[unroll]] for (int r = 0; r < SHARED_GROUPS; ++r)                                         \
        [[unroll]] for (int x = 0; x < SHARED_LANES; ++x) {                                    \
            VALUE a = subgroupShuffle(share[r][x], L);                                         \
            [[unroll]] for (int j = 0; j < TILE_N; ++j)                                        \
                acc[SHARED_ROW(r, x, L)][j] = PRODUCT_SUM(acc[SHARED_ROW(r, x, L)][j], a, b_[SHARED_K(x, L)][j]); \
        }

#if SHARED_LANES == 4
#define SHARED_LANES_ALL SHARED_LANE(0u) SHARED_LANE(1u) SHARED_LANE(2u) SHARED_LANE(3u)
#else
#define SHARED_LANES_ALL SHARED_LANE(0u) SHARED_LANE(1u) SHARED_LANE(2u) SHARED_LANE(3u)                 \
                         SHARED_LANE(4u) SHARED_LANE(5u) SHARED_LANE(6u) SHARED_LANE(7u)
#endif

#define SHARED_CHUNK(KK)                                                                       \
    {                                                                                          \
        VALUE share[SHARED_GROUPS][SHARED_LANES];                                              \
        VALUE b_[SHARED_LANES][TILE_N];                                                        \
        A_SHARE(KK)                                                                            \
        B_CHUNK(KK)                                                                            \
        SHARED_LANES_ALL                                                                       \
    }
#endif

uint column(uint n0, int j) {
    return n0 + uint(j / int(COLUMN_RUN)) * LANES_N * COLUMN_RUN + uint(j % int(COLUMN_RUN));
}

// The row and column an invocation reads for output row m and column n: past the edge, the
// last one (no branch in the loop; nothing is stored there); on a vector path, the same
// place within the last whole vector.
uint row_read(uint m) {
#if defined(A_VECTORS_ALONG_M)
    return m < M ? m : M - A_VECTOR_ELEMENTS + (m & (A_VECTOR_ELEMENTS - 1u));
#else
    return min(m, M - 1u);
#endif
}

uint column_read(uint n) {
#if defined(B_VECTORS_ALONG_N)
    return n < N ? n : N - B_VECTOR_ELEMENTS + (n & (B_VECTOR_ELEMENTS - 1u));
#else
    return min(n, N - 1u);
#endif
}

void main() {
    const uint blocks_m = (M + BLOCK_M - 1u) / BLOCK_M, blocks_n = (N + BLOCK_N - 1u) / BLOCK_N;
    uint block = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (block >= BATCH_COUNT * blocks_m * blocks_n) return;
    uint batch = block / (blocks_m * blocks_n);
    uint within = block % (blocks_m * blocks_n);
#if defined(SHARED_ROWS)
    // The lanes share their rows where the workgroup is one whole subgroup (the size planned
    // for); elsewhere each lane reads its own, one k at a time, to the same bits.
    bool sharing = gl_SubgroupSize == SHARED_LANES;
    uint lane = sharing ? gl_SubgroupInvocationID : gl_LocalInvocationID.x;
#else
    uint lane = gl_LocalInvocationID.x;
#endif
    uint m0 = (within / blocks_n) * BLOCK_M + (lane / LANES_N) * uint(TILE_M);
    // A lane's columns: COLUMN_RUN neighbours, runs LANES_N * COLUMN_RUN apart.
    uint n0 = (within % blocks_n) * BLOCK_N + (lane % LANES_N) * COLUMN_RUN;
    uint a_start = params.base[A_INPUT] + batch_offset(batch, A_INPUT);
    uint b_start = params.base[B_INPUT] + batch_offset(batch, B_INPUT);
    // Rows and columns past the edge read the last one (no branch in the loop) and store nothing.
    uint a_at[TILE_M];
    uint b_at[TILE_N];
    // (Vectors along M or N: the dim is a multiple of 4, so the last whole vector.)
    [[unroll]] for (int i = 0; i < TILE_M; ++i) a_at[i] = a_start + row_read(m0 + uint(i)) * A_STRIDES_[0];
    [[unroll]] for (int j = 0; j < TILE_N; ++j) b_at[j] = b_start + column_read(column(n0, j)) * B_STRIDES_[1];
    // Each row's and column's zero point (0 for floats): subtracted from every value read.
    VALUE a_zeros[TILE_M];
    VALUE b_zeros[TILE_N];
    [[unroll]] for (int i = 0; i < TILE_M; ++i) a_zeros[i] = a_zero(min(m0 + uint(i), M - 1u));
    [[unroll]] for (int j = 0; j < TILE_N; ++j) b_zeros[j] = b_zero(min(column(n0, j), N - 1u));
    VALUE acc[TILE_M][TILE_N];
    [[unroll]] for (int i = 0; i < TILE_M; ++i)
        [[unroll]] for (int j = 0; j < TILE_N; ++j) acc[i][j] = SUM_START;
#if defined(EXACTNESS_KEYS)
    uint keys_at = params.base[SCRATCH_BASE] + batch * (M + N);
    uint key_a = 0xFFFFFFFFu, key_b = 0xFFFFFFFFu;
    [[unroll]] for (int i = 0; i < TILE_M; ++i) key_a = min(key_a, scratch[keys_at + min(m0 + uint(i), M - 1u)]);
    [[unroll]] for (int j = 0; j < TILE_N; ++j)
        key_b = min(key_b, scratch[keys_at + M + min(column(n0, j), N - 1u)]);
    bool normal = products_stay_normal(key_a, key_b);
#if defined(SHARED_ROWS)
    sharing = sharing && subgroupAll(normal);
#endif
    if (!normal) {
        // Rare, and many times the hardware's cost whatever its shape: one k at a time, which
        // keeps its code and the driver's compile time small (a sixth of the unrolled loop's).
        for (uint k = 0u; k < K; ++k) GEMM_STEP(exact_product_sum, k)
    } else
#endif
    {
#if defined(SHARED_ROWS)
        uint k = 0u;
        if (sharing)
            for (; k + SHARED_LANES <= K; k += SHARED_LANES) SHARED_CHUNK(k)
        for (; k < K; ++k) GEMM_STEP(PRODUCT_SUM, k)
#else
        GEMM_LOOP(PRODUCT_SUM)
#endif
    }
    // The sums' bits first, in a loop with no loop inside: a driver may leave a loop that holds
    // another (a 16-bit store's compare-and-swap, an activation's) rolled, and the accumulators
    // it indexed would then live in memory for the whole kernel (lavapipe: 2.4x slower FP16).
    uint sums[TILE_M][TILE_N];
    [[unroll]] for (int i = 0; i < TILE_M; ++i)
        [[unroll]] for (int j = 0; j < TILE_N; ++j) sums[i][j] = sum_bits(acc[i][j]);
    [[unroll]] for (int i = 0; i < TILE_M; ++i) {
        [[unroll]] for (int j = 0; j < TILE_N; ++j) {
            uint m = m0 + uint(i), n = column(n0, j);
            if (m >= M || n >= N) continue;
            uint bits[EPILOGUE_INPUTS];
            bits[0] = sums[i][j];
#if EPILOGUE_TENSORS > 0
            [[unroll]] for (int t = 0; t < EPILOGUE_TENSORS; ++t)
                bits[1 + t] = input_load(uint(EPILOGUE_FIRST + t), params.base[EPILOGUE_FIRST + t]
                                         + batch_offset(batch, EPILOGUE_FIRST + t)
                                         + m * EPILOGUE_STRIDES_[2 * t] + n * EPILOGUE_STRIDES_[2 * t + 1]);
#endif
            output_store(0u, params.base[OUTPUT_BASE] + batch_offset(batch, OUTPUT_BASE)
                         + m * OUTPUT_STRIDES_[0] + n * OUTPUT_STRIDES_[1], gemm_epilogue(bits));
        }
    }
}
#endif
