#version 450
// The benchmark's yardstick: copy ITEM_COUNT words from binding 0 to binding 1 with the
// same dispatch shape as the operators, so their bandwidth can be read as a fraction of it.
#extension GL_GOOGLE_include_directive : require

layout(local_size_x = WORKGROUP_SIZE) in;
layout(set = 0, binding = 0) readonly buffer Source { uint source[]; };
layout(set = 0, binding = 1) writeonly buffer Destination { uint destination[]; };

void main() {
    uint group = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (group >= GROUP_COUNT) return;
    uint item = group * WORKGROUP_SIZE + gl_LocalInvocationID.x;
    if (item >= ITEM_COUNT) return;
    destination[item] = source[item];
}
