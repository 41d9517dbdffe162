#version 450
// Whether the device keeps FP32 subnormals in additions and multiplications when a shader
// asks nothing of it (Device: the adapter's `denormals`, probed once per device). The
// operands come from a buffer, so no compiler folds them.
//   values[0] * values[1]: normal operands, a subnormal product
//   values[2] + values[3]: subnormal operands, a subnormal sum
//   values[2] * values[4]: a subnormal times one
//   values[5] - values[6]: normal operands, a subnormal difference
// into values[8..11].

layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer Values { float values[]; };

void main() {
    precise float product = values[0] * values[1];
    precise float sum = values[2] + values[3];
    precise float scaled = values[2] * values[4];
    precise float difference = values[5] - values[6];
    values[8] = product;
    values[9] = sum;
    values[10] = scaled;
    values[11] = difference;
}
