#version 450
// The benchmark's yardstick: copy `word_count` words from binding 0 to binding 1, 16 bytes
// per invocation like the operators' packed path, so their bandwidth reads as a fraction
// of the best a plain shader moves on this device.

layout(local_size_x = WORKGROUP_SIZE) in;
layout(set = 0, binding = 0) readonly buffer Source { uvec4 source[]; };
layout(set = 0, binding = 1) writeonly buffer Destination { uvec4 destination[]; };
layout(push_constant) uniform Params { uint word_count; } params;  // a multiple of 4

void main() {
    uint item = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * WORKGROUP_SIZE + gl_LocalInvocationID.x;
    if (item < params.word_count / 4u) destination[item] = source[item];
}
