"""Run a desc on buffers filled with random bits and compute what every byte must become.

Each tensor lives in its own buffer at a binding offset, surrounded by random bytes. The
expected output buffer is its initial contents with only the output's elements replaced,
so a comparison of whole buffers also proves nothing outside the tensor was written.
"""

from __future__ import annotations

import numpy as np
from reference import REFERENCES

import dmlpy as dml
from dmlpy.base.types import data_type_info

UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32}


def element_offsets(sizes, strides) -> np.ndarray:
    """Offset of every logical element, in elements, shaped like `sizes`."""
    offsets = np.zeros(sizes, dtype=np.int64)
    for dim, (size, stride) in enumerate(zip(sizes, strides)):
        shape = [1] * len(sizes)
        shape[dim] = size
        offsets = offsets + (np.arange(size, dtype=np.int64) * stride).reshape(shape)
    return offsets


def random_bits(rng, count: int, element_size: int) -> np.ndarray:
    return rng.integers(0, 2 ** (8 * element_size), size=count, dtype=UNSIGNED[element_size])


def run_and_expect(device, desc, rng, offsets=None, in_place=None):
    """Execute `desc`; return (actual, expected) contents of the output buffers as bytes.

    offsets: binding offset per tensor (default 0). in_place: (output field, input field)
    to bind the output to exactly the input's range.
    """
    schema = desc.schema
    fields = schema.tensors
    offsets = offsets or {f.name: 0 for f in fields}
    tensors = {f.name: getattr(desc, f.name) for f in fields}
    info = data_type_info(tensors[fields[0].name].data_type)
    unsigned = UNSIGNED[info.element_size]
    contents, buffers = {}, {}
    for field in fields:
        if in_place and field.name == in_place[0]:
            continue
        tensor = tensors[field.name]
        size = offsets[field.name] + tensor.total_tensor_size_in_bytes + 16
        contents[field.name] = random_bits(rng, size, 1)
        buffers[field.name] = device.create_buffer(size)
        buffers[field.name].write(contents[field.name])
    if in_place:
        buffers[in_place[0]] = buffers[in_place[1]]
        contents[in_place[0]] = contents[in_place[1]]
        offsets = {**offsets, in_place[0]: offsets[in_place[1]]}

    def values(name):
        tensor = tensors[name]
        raw = contents[name][offsets[name]:offsets[name] + tensor.total_tensor_size_in_bytes]
        elements = raw[: len(raw) // info.element_size * info.element_size].view(unsigned)
        return elements[element_offsets(tensor.sizes, tensor.element_strides)].view(info.numpy_dtype)

    inputs = [values(f.name) for f in schema.inputs]
    results = (REFERENCES[schema.name](*inputs, **{s.name: getattr(desc, s.name) for s in schema.scalars}),)
    expected = {}
    for field, result in zip(schema.outputs, results):
        tensor = tensors[field.name]
        start = offsets[field.name]
        buffer_bytes = contents[field.name].copy()
        region = buffer_bytes[start:start + tensor.total_tensor_size_in_bytes]
        whole = region[: len(region) // info.element_size * info.element_size].view(unsigned)
        whole[element_offsets(tensor.sizes, tensor.element_strides)] = result.view(unsigned)
        expected[field.name] = buffer_bytes

    compiled = device.compile_operator(device.create_operator(desc))
    table = device.create_binding_table(
        compiled,
        inputs=[dml.BufferBinding(buffers[f.name], offsets[f.name]) for f in schema.inputs],
        outputs=[dml.BufferBinding(buffers[f.name], offsets[f.name]) for f in schema.outputs])
    device.execute(table)
    actual = {f.name: buffers[f.name].read(np.uint8, len(expected[f.name])) for f in schema.outputs}
    for buffer in {id(b): b for b in buffers.values()}.values():
        buffer.destroy()
    return compiled, actual, expected


def assert_bytes_equal(actual: np.ndarray, expected: np.ndarray, element_size: int, what: str = "") -> None:
    if np.array_equal(actual, expected):
        return
    wrong = np.flatnonzero(actual != expected)
    first = wrong[0] // element_size * element_size
    raise AssertionError(
        f"{what}: {wrong.size} bytes differ; first at byte {wrong[0]}: got "
        f"{actual[first:first + element_size].tobytes().hex()} expected "
        f"{expected[first:first + element_size].tobytes().hex()}")
