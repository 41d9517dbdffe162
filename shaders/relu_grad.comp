#version 450
// ACTIVATION_RELU_GRAD: OutputGradientTensor = InputTensor > 0 ? InputGradientTensor : 0.
// A select, not a product: dY's bits pass through unchanged (NaN, -0, inf included) and
// every other element is +0, even where dY is inf or NaN.
#extension GL_GOOGLE_include_directive : require
#include "elementwise.glsl"

uint apply_op(uint x_bits, uint dy_bits) {
    return is_positive(x_bits) ? dy_bits : 0u;
}
