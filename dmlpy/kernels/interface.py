"""A kernel's interface, described once: the tensors it binds (inputs, outputs, optional
scratch), each with its own data type, and its push constants. From this one description
come the GLSL bindings and `Params` block (the generated header `kernel_interface.glsl`, which
every kernel family includes instead of writing its own), the push-constant values in that
block's order, and the device limits a kernel must fit.

Bindings: input k at binding k, output o at binding INPUT_COUNT + o, the scratch after the
outputs. Params: `base[]`, each binding's first element of this dispatch (the scratch's
first word last), then the element count, then the operator's FP32 scalars as bits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..base.adapter import AdapterInfo, AdapterType
from ..base.errors import UnsupportedError
from ..base.types import TensorDataType, data_type_info

# The most tensors each kernel family takes: its loops over them are unrolled, so every
# tensor costs registers in every invocation. Eight inputs hold an optimizer's update or a
# masked loss (parameters, gradient, moments, mask, Python scalars) in one element-wise
# kernel; five a weighted, masked loss in the prologue of the reduction that ends it.
MAX_ELEMENTWISE_INPUTS = 8
MAX_REDUCTION_INPUTS, MAX_REDUCTION_OUTPUTS = 5, 2


@dataclass(frozen=True)
class KernelInterface:
    inputs: tuple[TensorDataType, ...]
    outputs: tuple[TensorDataType, ...]
    scratch: bool = False  # a raw word buffer after the outputs (the temporary resource)
    scalar_count: int = 0
    vector_views: bool = False  # each tensor also seen as 16-byte vectors (`NAME_vec4[]`)
    # input_vector() and output_vector_store() move each vector as two 64-bit words
    # (`NAME_pair[]`; the kernel declares 64-bit integers where VECTOR_WORDS_64 is defined):
    # for a device that loads and stores a vector component by component.
    vector_words_64: bool = False

    @property
    def defines(self) -> dict[str, str]:
        """The defines the kernel's source needs for this interface."""
        return {"VECTOR_WORDS_64": ""} if self.vector_words_64 else {}

    @property
    def tensors(self) -> tuple[TensorDataType, ...]:
        return (*self.inputs, *self.outputs)

    @property
    def storage_buffers(self) -> int:
        return len(self.tensors) + self.scratch

    @property
    def push_constant_words(self) -> int:
        return self.storage_buffers + 1 + self.scalar_count  # base[], element_count, scalar_bits[]

    def shortfalls(self, adapter: AdapterInfo) -> tuple[str, ...]:
        """Each limit of `adapter` this interface exceeds, said as an UnsupportedError says it."""
        shortfalls = []
        if self.storage_buffers > adapter.max_per_stage_descriptor_storage_buffers:
            shortfalls.append(f"the kernel binds {self.storage_buffers} storage buffers; the device allows "
                              f"{adapter.max_per_stage_descriptor_storage_buffers} "
                              "(maxPerStageDescriptorStorageBuffers)")
        if 4 * self.push_constant_words > adapter.max_push_constants_size:
            shortfalls.append(f"the kernel pushes {4 * self.push_constant_words} bytes of constants; the device "
                              f"allows {adapter.max_push_constants_size} (maxPushConstantsSize)")
        return tuple(shortfalls)

    def fits(self, adapter: AdapterInfo) -> bool:
        """Whether the device can bind this interface (check() says why not)."""
        return not self.shortfalls(adapter)

    def check(self, adapter: AdapterInfo) -> None:
        """Raise UnsupportedError where the device cannot bind this interface."""
        if shortfalls := self.shortfalls(adapter):
            raise UnsupportedError("; ".join(shortfalls))

    def push_constants(self, base_elements: tuple[int, ...], element_count: int,
                       scalar_bits: tuple[int, ...]) -> np.ndarray:
        """The Params block's words: base[] (one per binding), element_count, scalar_bits[]."""
        if len(base_elements) != self.storage_buffers or len(scalar_bits) != self.scalar_count:
            raise ValueError(f"{len(base_elements)} bases and {len(scalar_bits)} scalars for a kernel binding "
                             f"{self.storage_buffers} buffers with {self.scalar_count} scalars")
        return np.array([*base_elements, element_count, *scalar_bits], dtype=np.uint32)

    def header(self) -> tuple[str, ...]:
        """The GLSL of the bindings, their accessors and the Params block (kernel_interface.glsl).
        Needs tensor_storage.glsl's TENSOR_* macros before it."""
        names = [f"input{k}" for k in range(len(self.inputs))] + [f"output{o}" for o in range(len(self.outputs))]
        bits = [data_type_info(t).bits for t in self.tensors]
        lines = [f"#define INPUT_COUNT {len(self.inputs)}", f"#define OUTPUT_COUNT {len(self.outputs)}",
                 f"#define TENSOR_COUNT {len(self.tensors)}", f"#define SCALAR_COUNT {self.scalar_count}"]
        for binding, (name, width) in enumerate(zip(names, bits)):
            kind = "INPUT" if binding < len(self.inputs) else "OUTPUT"
            lines.append(f"TENSOR_{kind}({binding}, {name}, {width}u)")
        if self.vector_views:
            for binding, name in enumerate(names):
                access = "readonly" if binding < len(self.inputs) else "writeonly"
                lines.append(f"TENSOR_VECTORS({binding}, {name}, {access})")
            if self.vector_words_64:
                for binding, name in enumerate(names):
                    access = "readonly" if binding < len(self.inputs) else "writeonly"
                    lines.append(f"TENSOR_VECTOR_PAIRS({binding}, {name}, {access})")
        if self.scratch:
            lines.append(f"layout(set = 0, binding = {len(names)}) buffer Scratch {{ uint scratch[]; }};")
        lines += ["layout(push_constant) uniform Params {",
                  "    // Where each binding's first element of this dispatch lies in it, in elements (inputs,",
                  "    // outputs, then the scratch's first word).",
                  f"    uint base[{self.storage_buffers}];",
                  "    uint element_count;"]
        if self.scalar_count:
            lines += ["    // The operator's FP32 scalars, as bits. Push constants, never #defines: a driver may fold",
                      "    // arithmetic on a constant without IEEE care (x * 0.0 -> +0 where IEEE says -0 or NaN).",
                      "    uint scalar_bits[SCALAR_COUNT];"]
        lines.append("} params;")
        # Input t's words, elements and vectors by index (a constant once loops are unrolled);
        # none for a kernel without inputs (a fill's).
        inputs = names[:len(self.inputs)]
        if inputs:
            lines += _dispatcher("uint input_word(uint t, uint w)", "t", [f"return {n}[w];" for n in inputs])
            lines += _dispatcher("uint input_load(uint t, uint e)", "t", [f"return {n}_load(e);" for n in inputs])
        if self.vector_views and self.vector_words_64:
            lines += ["uvec4 unpack_pair(u64vec2 w) { return uvec4(unpackUint2x32(w.x), unpackUint2x32(w.y)); }",
                      "u64vec2 pack_pair(uvec4 v) { return u64vec2(packUint2x32(v.xy), packUint2x32(v.zw)); }"]
        if self.vector_views and inputs:
            load = "return unpack_pair({}_pair[v]);" if self.vector_words_64 else "return {}_vec4[v];"
            lines += _dispatcher("uvec4 input_vector(uint t, uint v)", "t", [load.format(n) for n in inputs])
            # A function, not a const array: lavapipe folds a constant array's element only at
            # index 0, so other inputs' sizes (and the vector indices they give) stayed dynamic.
            lines += _dispatcher("uint input_element_bits(uint t)", "t", [f"return {b}u;" for b in bits[:len(inputs)]])
        lines += _dispatcher("void output_store(uint o, uint e, uint bits)", "o",
                             [f"{n}_store(e, bits);" for n in names[len(self.inputs):]])
        if self.vector_views and self.outputs:
            store = "{}_pair[v] = pack_pair(value);" if self.vector_words_64 else "{}_vec4[v] = value;"
            lines += _dispatcher("void output_vector_store(uint o, uint v, uvec4 value)", "o",
                                 [store.format(n) for n in names[len(self.inputs):]])
        return tuple(lines)


def _dispatcher(signature: str, index: str, statements: list[str]) -> list[str]:
    """A function running the statement `index` names; the first is the fallback."""
    def alone(statement: str) -> str:
        return statement if statement.startswith("return") else f"{statement} return;"
    return [f"{signature} {{", *(f"    if ({index} == {k}u) {{ {alone(s)} }}" for k, s in enumerate(statements) if k),
            f"    {statements[0]}", "}"]


def moves_vectors_in_64bit_words(adapter: AdapterInfo) -> bool:
    """Whether kernels move their 16-byte vectors as two 64-bit words on `adapter`: a CPU
    device (lavapipe) loads and stores a vector component by component, so half the
    components is nearly half the time (a copy: 2.2 GB/s in 32-bit components, 4.0 in 64-bit);
    a GPU moves the vector in one access either way."""
    return adapter.adapter_type == AdapterType.CPU and adapter.shader_int64

