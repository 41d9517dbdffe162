// dmlpy's own transcendental functions, the same bits on every device: built only from
// `precise` FP32 additions and multiplications, exact integer bit operations and
// comparisons, never from a driver's exp/log/tanh (the Vulkan spec lets those be off by
// 3 + 2·|x| ULP, and every vendor rounds differently). Included where an operator's
// expression uses one (USES_TRANSCENDENTALS).
