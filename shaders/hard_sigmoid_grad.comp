#version 450
// ACTIVATION_HARD_SIGMOID_GRAD (dmlpy extension, oneDNN's HardSigmoidBackward):
//   OutputGradientTensor = 0 < Alpha * InputTensor + Beta < 1 ? InputGradientTensor * Alpha : 0
// In FP32 from the stored values, each operation rounded on its own (`precise`: no device
// may fuse the multiply and add into an FMA and move a boundary), rounded once to storage.
//
// Alpha and Beta arrive as push constants (scalar0_bits, scalar1_bits): see elementwise.glsl.
#extension GL_GOOGLE_include_directive : require
#include "elementwise.glsl"

uint apply_op(uint x_bits, uint dy_bits) {
    float alpha = uintBitsToFloat(params.scalar0_bits);
    float beta = uintBitsToFloat(params.scalar1_bits);
    precise float scaled = alpha * to_float(x_bits);
    precise float shifted = scaled + beta;
    if (!(shifted > 0.0 && shifted < 1.0)) return 0u;  // NaN fails both tests: +0
    precise float gradient = to_float(dy_bits) * alpha;
    return from_float(gradient);
}
