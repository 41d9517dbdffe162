#version 450
// The benchmark's yardstick: copy `word_count` words from binding 0 to binding 1 with the
// same dispatch shape as the operators, so their bandwidth can be read as a fraction of it.

layout(local_size_x = WORKGROUP_SIZE) in;
layout(set = 0, binding = 0) readonly buffer Source { uint source[]; };
layout(set = 0, binding = 1) writeonly buffer Destination { uint destination[]; };
layout(push_constant) uniform Params { uint word_count; } params;

void main() {
    uint item = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * WORKGROUP_SIZE + gl_LocalInvocationID.x;
    if (item < params.word_count) destination[item] = source[item];
}
