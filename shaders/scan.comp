#version 450
// The scan kernel family: running sums and products along one axis (CUMULATIVE_SUMMATION,
// CUMULATIVE_PRODUCT). One invocation per row (the kept dims, ROW_COUNT rows) walks its
// LENGTH elements in order, backwards where REVERSE is defined, and writes the running value
// at each: after its element joins (inclusive), or before (EXCLUSIVE: SCAN_IDENTITY first,
// +0 or 1). Each result is the
// plain left-to-right running value, so the bits depend only on the values, never on the
// workgroup size or the device. An output bound over its input is safe: each element is
// read before it is written, by the one invocation that owns its row.
//
// Generated headers: kernel_interface.glsl (bindings, input_load, output_store, params) and
// scan_body.glsl (dmlpy/kernels/scan.py): SCAN_VALUE, SCAN_IDENTITY, scan_value(bits),
// scan_combine(a, b), scan_stored(value), scan_carry(value) and scan_carried(word).
//
// lavapipe ends an invocation's loops after 65,535 iterations in all, so a row is walked in
// stages of at most 4,096 elements (positions WALK_FIRST to WALK_END of the walk), one dispatch
// each, the running value carried between them in the scratch (CARRY_IN, CARRY_OUT: one word
// a row at params.base[2]).
//
// Defines: DTYPE_* and ELEMENT_BITS (the output's), WORKGROUP_SIZE, ROW_COUNT, LENGTH,
// AXIS_STRIDES (input's, output's), KEPT_RANK, KEPT_SIZES, KEPT_STRIDES (per dim: input's,
// output's), REVERSE, EXCLUSIVE, WALK_FIRST, WALK_END, CARRY_IN, CARRY_OUT.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "float_controls.glsl"

#include "tensor_storage.glsl"
#include "numeric.glsl"

layout(local_size_x = WORKGROUP_SIZE) in;

#include "kernel_interface.glsl"
#include "scan_body.glsl"

const uint AXIS_STRIDES_[2] = uint[2](AXIS_STRIDES);
const uint KEPT_SIZES_[KEPT_RANK] = uint[KEPT_RANK](KEPT_SIZES);
const uint KEPT_STRIDES_[KEPT_RANK * 2] = uint[KEPT_RANK * 2](KEPT_STRIDES);

void main() {
    uint row = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * WORKGROUP_SIZE + gl_LocalInvocationID.x;
    if (row >= ROW_COUNT) return;
    uint source_at = params.base[0], target_at = params.base[1];
    uint rest = row;
    [[unroll]] for (int d = KEPT_RANK - 1; d >= 0; --d) {
        uint index = rest % KEPT_SIZES_[d];
        source_at += index * KEPT_STRIDES_[d * 2];
        target_at += index * KEPT_STRIDES_[d * 2 + 1];
        rest /= KEPT_SIZES_[d];
    }
#if defined(CARRY_IN)
    SCAN_VALUE running = scan_carried(scratch[params.base[2] + row]);
#else
    SCAN_VALUE running = SCAN_IDENTITY;
#endif
    for (uint k = WALK_FIRST; k < WALK_END; ++k) {
#if defined(REVERSE)
        uint i = LENGTH - 1u - k;
#else
        uint i = k;
#endif
        SCAN_VALUE value = scan_value(input_load(0u, source_at + i * AXIS_STRIDES_[0]));
#if defined(EXCLUSIVE)
        output_store(0u, target_at + i * AXIS_STRIDES_[1], scan_stored(running));
#endif
        // The first element starts the running value (no identity added: -0 stays -0).
        running = k == 0u ? value : scan_combine(running, value);
#if !defined(EXCLUSIVE)
        output_store(0u, target_at + i * AXIS_STRIDES_[1], scan_stored(running));
#endif
    }
#if defined(CARRY_OUT)
    scratch[params.base[2] + row] = scan_carry(running);
#endif
}
