#version 450
// Every element-wise operator: elementwise.glsl specialised by the descs' defines, with the
// operator's math rendered from its expression (dmlpy/ops/activations.py) as operator_body.glsl.
#extension GL_GOOGLE_include_directive : require
#include "elementwise.glsl"
