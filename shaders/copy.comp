#version 450
// The benchmark's yardstick: copy `word_count` words (a multiple of 4) from binding 0 to
// binding 1 as 16-byte vectors, VECTORS_PER_INVOCATION per invocation: consecutive, or a
// workgroup apart (INTERLEAVED); with WORDS_64, each vector as two 64-bit components (a
// device that moves a vector component by component, lavapipe, moves half as many).
// tools/bench.py runs several shapes and takes the fastest, so an operator's bandwidth
// reads as a fraction of the best a plain shader moves here. Two one-way forms: READ_ONLY
// reads the vectors and writes none (a vector only where their XOR equals word_count + 1, a
// test no compiler can decide, so the reads stay), WRITE_ONLY writes them and reads none;
// a kernel that reads more than it writes (a reduction, a comparison's narrow output) is
// then set beside the best this device reads and writes those bytes at.
#if defined(WORDS_64)
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#define VECTOR u64vec2
#define COMPONENT uint64_t
#else
#define VECTOR uvec4
#define COMPONENT uint
#endif

layout(local_size_x = WORKGROUP_SIZE) in;
layout(set = 0, binding = 0) readonly buffer Source { VECTOR source[]; };
layout(set = 0, binding = 1) writeonly buffer Destination { VECTOR destination[]; };
layout(push_constant) uniform Params { uint word_count; } params;

void main() {
    uint group = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    uint vector_count = params.word_count / 4u;
#if defined(READ_ONLY)
    VECTOR seen = VECTOR(0u);
    uint last = vector_count;
#endif
    for (uint k = 0u; k < VECTORS_PER_INVOCATION; ++k) {
#if defined(INTERLEAVED)
        uint v = (group * VECTORS_PER_INVOCATION + k) * WORKGROUP_SIZE + gl_LocalInvocationID.x;
#else
        uint v = (group * WORKGROUP_SIZE + gl_LocalInvocationID.x) * VECTORS_PER_INVOCATION + k;
#endif
        if (v < vector_count) {
#if defined(READ_ONLY)
            seen ^= source[v];
            last = v;
#elif defined(WRITE_ONLY)
            destination[v] = VECTOR(v);
#else
            destination[v] = source[v];
#endif
        }
    }
#if defined(READ_ONLY)
    if (last < vector_count && seen.x == COMPONENT(params.word_count) + COMPONENT(1u)) destination[last] = seen;
#endif
}
