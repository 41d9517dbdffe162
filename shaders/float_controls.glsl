// SPIR-V float controls (SPV_KHR_float_controls), asked for where the device offers them
// (codegen.float_controls_defines): DENORM_PRESERVE keeps FP32 subnormal operands and
// results of the hardware's arithmetic; SIGNED_ZERO_INF_NAN_PRESERVE forbids optimisations
// that assume no -0, infinity or NaN. Where DenormPreserve is missing and the device may
// flush, numeric.glsl's DENORMALS_EXACT arithmetic keeps subnormals instead.
#if defined(DENORM_PRESERVE) || defined(SIGNED_ZERO_INF_NAN_PRESERVE)
#extension GL_EXT_spirv_intrinsics : require
#endif
#if defined(DENORM_PRESERVE)
// ExecutionMode DenormPreserve (4459) for 32-bit floats; Capability DenormPreserve (4464)
spirv_execution_mode(extensions = ["SPV_KHR_float_controls"], capabilities = [4464], 4459, 32);
#endif
#if defined(SIGNED_ZERO_INF_NAN_PRESERVE)
// ExecutionMode SignedZeroInfNanPreserve (4461); Capability SignedZeroInfNanPreserve (4466)
spirv_execution_mode(extensions = ["SPV_KHR_float_controls"], capabilities = [4466], 4461, 32);
#endif
