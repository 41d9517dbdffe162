#version 450
// The benchmark's yardstick: copy `word_count` words (a multiple of 4) from binding 0 to
// binding 1 as 16-byte vectors, VECTORS_PER_INVOCATION per invocation: consecutive, or a
// workgroup apart (INTERLEAVED). tools/bench.py runs several shapes and takes the fastest,
// so an operator's bandwidth reads as a fraction of the best a plain shader moves here.

layout(local_size_x = WORKGROUP_SIZE) in;
layout(set = 0, binding = 0) readonly buffer Source { uvec4 source[]; };
layout(set = 0, binding = 1) writeonly buffer Destination { uvec4 destination[]; };
layout(push_constant) uniform Params { uint word_count; } params;

void main() {
    uint group = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    uint vector_count = params.word_count / 4u;
    for (uint k = 0u; k < VECTORS_PER_INVOCATION; ++k) {
#if defined(INTERLEAVED)
        uint v = (group * VECTORS_PER_INVOCATION + k) * WORKGROUP_SIZE + gl_LocalInvocationID.x;
#else
        uint v = (group * WORKGROUP_SIZE + gl_LocalInvocationID.x) * VECTORS_PER_INVOCATION + k;
#endif
        if (v < vector_count) destination[v] = source[v];
    }
}
