"""DML_BUFFER_TENSOR_DESC: data type, 1-8 sizes, element strides, total size, base alignment."""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .errors import InvalidArgumentError
from .types import DATA_TYPES, TensorDataType, TensorFlags, data_type_for_numpy, data_type_info

MAX_DIMENSION_COUNT = 8
UINT32_MAX = 2**32 - 1
UINT64_MAX = 2**64 - 1


def _field(what: str) -> str:
    """The attribute a `what` such as "BufferTensorDesc.sizes[1]" names: "sizes"."""
    return what.rsplit(".", 1)[-1].split("[")[0]


def _as_uint(value, what: str, maximum: int, negative_rule: str = "") -> int:
    """`value` as a Python int in [0, maximum]; bools and floats are not integers here.
    `negative_rule` says why a negative value is wrong, where that needs saying."""
    if isinstance(value, bool):
        raise InvalidArgumentError(f"{what} {value!r} must be an integer, not a bool", _field(what))
    try:
        number = operator.index(value)
    except TypeError:
        raise InvalidArgumentError(f"{what} {value!r} must be an integer", _field(what)) from None
    if number < 0 and negative_rule:
        raise InvalidArgumentError(f"{what} {number} is negative: {negative_rule}", _field(what))
    if not 0 <= number <= maximum:
        raise InvalidArgumentError(f"{what} {number} is out of range: it must be in [0, {maximum}]", _field(what))
    return number


NEGATIVE_STRIDE_RULE = ("DirectML's strides are unsigned counts of elements, so a tensor cannot be read backwards "
                        "(reverse the data itself first, e.g. np.ascontiguousarray(a[::-1]))")


def _as_data_type(value, what: str) -> TensorDataType:
    if isinstance(value, bool):
        raise InvalidArgumentError(f"{what} {value!r} is not a TensorDataType", "data_type")
    if not isinstance(value, (int, np.integer)):
        return _numpy_data_type(value, what)
    try:
        data_type = TensorDataType(int(value))
    except (ValueError, TypeError):
        raise InvalidArgumentError(f"{what} {value!r} is not a TensorDataType", "data_type") from None
    if data_type == TensorDataType.UNKNOWN:
        raise InvalidArgumentError(f"{what} UNKNOWN is never a valid data type", "data_type")
    return data_type


def _numpy_data_type(value, what: str) -> TensorDataType:
    """A NumPy dtype (np.float16, np.dtype("int8"), "float32", ml_dtypes.bfloat16) as the
    TensorDataType stored the same way."""
    try:
        if isinstance(value, np.generic):  # a value (np.float32(1)), not a type, though np.dtype takes it
            raise TypeError
        dtype = np.dtype(value)
    except (TypeError, ValueError):
        raise InvalidArgumentError(
            f"{what} {value!r} is not a TensorDataType (nor a NumPy dtype that names one)", "data_type") from None
    data_type = data_type_for_numpy(dtype)
    if data_type is None:
        raise InvalidArgumentError(
            f"{what} {value!r} is NumPy's {dtype}, which no TensorDataType stores: use one of "
            f"{', '.join(t.name for t in DATA_TYPES)}", "data_type")
    return data_type


def _as_dims(values, what: str, minimum: int, negative_rule: str = "") -> tuple[int, ...]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise InvalidArgumentError(f"{what} {values!r} must be a sequence of integers", _field(what))
    dims = tuple(_as_uint(v, f"{what}[{i}]", UINT32_MAX, negative_rule) for i, v in enumerate(values))
    if not 1 <= len(dims) <= MAX_DIMENSION_COUNT:
        raise InvalidArgumentError(
            f"{what} has {len(dims)} dimensions: DimensionCount must be 1 to {MAX_DIMENSION_COUNT}", _field(what))
    for i, size in enumerate(dims):
        if size < minimum:
            raise InvalidArgumentError(f"{what}[{i}] is {size}: every size must be at least {minimum}", _field(what))
    return dims


def _check_sizes_and_strides(data_type, sizes, strides, what: str):
    data_type = _as_data_type(data_type, f"{what}.data_type")
    sizes = _as_dims(sizes, f"{what}.sizes", 1)
    if strides is not None:
        strides = _as_dims(strides, f"{what}.strides", 0, NEGATIVE_STRIDE_RULE)
        if len(strides) != len(sizes):
            raise InvalidArgumentError(
                f"{what}.strides has {len(strides)} entries but sizes has {len(sizes)}: "
                "there must be one stride per dimension", "strides")
    return data_type, sizes, strides


def _implied_size(data_type: TensorDataType, sizes, strides) -> int:
    if strides is None:
        element_span = math.prod(sizes)
    else:
        element_span = sum((s - 1) * t for s, t in zip(sizes, strides)) + 1
    return (element_span * data_type_info(data_type).element_size + 3) & ~3


def calc_buffer_tensor_size(data_type: TensorDataType, sizes: Sequence[int],
                            strides: Sequence[int] | None = None) -> int:
    """DMLCalcBufferTensorSize: bytes from the first to the last element, rounded up to 4."""
    data_type, sizes, strides = _check_sizes_and_strides(data_type, sizes, strides, "calc_buffer_tensor_size")
    return _implied_size(data_type, sizes, strides)


def packed_strides(sizes: Sequence[int]) -> tuple[int, ...]:
    """Row-major element strides of a packed tensor."""
    strides, step = [], 1
    for size in reversed(sizes):
        strides.append(step)
        step *= size
    return tuple(reversed(strides))


@dataclass(frozen=True)
class BufferTensorDesc:
    """A tensor laid out in a buffer, exactly as DML_BUFFER_TENSOR_DESC describes it.

    `strides` are in elements; None means packed row-major. A stride of 0 broadcasts a
    dimension. `total_tensor_size_in_bytes` defaults to `calc_buffer_tensor_size`.
    """

    data_type: TensorDataType
    sizes: tuple[int, ...]
    strides: tuple[int, ...] | None = None
    flags: TensorFlags = TensorFlags.NONE
    total_tensor_size_in_bytes: int | None = None
    guaranteed_base_offset_alignment: int = 0

    def __post_init__(self):
        what = "BufferTensorDesc"
        data_type, sizes, strides = _check_sizes_and_strides(self.data_type, self.sizes, self.strides, what)
        element_count = math.prod(sizes)
        if element_count > UINT32_MAX:
            raise InvalidArgumentError(
                f"{what}.sizes {sizes} hold {element_count} elements: at most {UINT32_MAX} are allowed", "sizes")
        flags_value = _as_uint(self.flags, f"{what}.flags", UINT32_MAX)
        if flags_value & ~int(TensorFlags.OWNED_BY_DML):
            raise InvalidArgumentError(f"{what}.flags 0x{flags_value:X} has bits that are not TensorFlags", "flags")
        implied = _implied_size(data_type, sizes, strides)
        if implied > UINT64_MAX:
            raise InvalidArgumentError(
                f"{what}.sizes {sizes} with strides {strides} span {implied} bytes: more than a UINT64 can count",
                "strides")
        if self.total_tensor_size_in_bytes is None:
            total = implied
        else:
            total = _as_uint(self.total_tensor_size_in_bytes, f"{what}.total_tensor_size_in_bytes", UINT64_MAX)
            if total < implied:
                raise InvalidArgumentError(
                    f"{what}.total_tensor_size_in_bytes {total} is smaller than the {implied} bytes "
                    "that calc_buffer_tensor_size gives for these sizes and strides", "total_tensor_size_in_bytes")
        alignment = _as_uint(self.guaranteed_base_offset_alignment,
                             f"{what}.guaranteed_base_offset_alignment", UINT32_MAX)
        element_size = data_type_info(data_type).element_size
        if alignment and (alignment & (alignment - 1) or alignment < element_size):
            raise InvalidArgumentError(
                f"{what}.guaranteed_base_offset_alignment {alignment} must be 0 or a power of two "
                f"at least the element size ({element_size} bytes for {data_type.name})",
                "guaranteed_base_offset_alignment")
        for name, value in (("data_type", data_type), ("sizes", sizes), ("strides", strides),
                            ("flags", TensorFlags(flags_value)), ("total_tensor_size_in_bytes", total),
                            ("guaranteed_base_offset_alignment", alignment)):
            object.__setattr__(self, name, value)

    def __repr__(self) -> str:
        """Data type and sizes, then only the fields that differ from their defaults."""
        parts = [self.data_type.name, repr(self.sizes)]
        if self.strides is not None:
            parts.append(f"strides={self.strides}")
        if self.flags:
            parts.append(f"flags={self.flags.name}")
        if self.total_tensor_size_in_bytes != _implied_size(self.data_type, self.sizes, self.strides):
            parts.append(f"total_tensor_size_in_bytes={self.total_tensor_size_in_bytes}")
        if self.guaranteed_base_offset_alignment:
            parts.append(f"guaranteed_base_offset_alignment={self.guaranteed_base_offset_alignment}")
        return f"BufferTensorDesc({', '.join(parts)})"

    @classmethod
    def copy_of(cls, desc, what: str = "BufferTensorDesc") -> BufferTensorDesc:
        """A new, validated BufferTensorDesc with `desc`'s values (DirectML copies descs when
        an operator is created: nothing done to the caller's object later reaches it)."""
        if not isinstance(desc, BufferTensorDesc):
            raise InvalidArgumentError(f"{what} must be a BufferTensorDesc, not {type(desc).__name__}", "type")
        try:
            values = [getattr(desc, name) for name in _FIELDS]
        except Exception as error:  # a subclass may do anything in a property
            raise InvalidArgumentError(f"{what} could not be read: {error!r}", "type") from None
        try:
            return cls(*values)
        except InvalidArgumentError as error:
            raise InvalidArgumentError(f"{what}: {error.message}", error.field) from None

    @property
    def dimension_count(self) -> int:
        return len(self.sizes)

    @property
    def element_count(self) -> int:
        return math.prod(self.sizes)

    @property
    def element_size(self) -> int:
        return data_type_info(self.data_type).element_size

    @property
    def element_strides(self) -> tuple[int, ...]:
        """The strides in elements, packed ones filled in when `strides` is None."""
        return self.strides if self.strides is not None else packed_strides(self.sizes)

    def writes_each_element_once(self) -> bool:
        """True when no two indices share an element (required of an output).

        Dims sorted by stride, each stride must step past everything the smaller dims
        reach; when that quick proof fails the offsets are counted exactly.
        """
        dims = sorted((t, s) for s, t in zip(self.sizes, self.element_strides) if s > 1)
        reach = 0
        for stride, size in dims:
            if stride <= reach:
                return _offsets_are_distinct(dims)
            reach += (size - 1) * stride
        return True


_FIELDS = ("data_type", "sizes", "strides", "flags", "total_tensor_size_in_bytes", "guaranteed_base_offset_alignment")

# Offsets the exact overlap check may enumerate (8 bytes each); a layout past this that no
# quick argument decides is refused as unprovable.
EXACT_OVERLAP_CHECK_LIMIT = 1 << 22


def _offsets_are_distinct(dims) -> bool:
    """Exact answer for (stride, size) dims the nesting argument did not settle, in time and
    memory bounded independently of the element count."""
    if any(stride == 0 for stride, _ in dims):
        return False
    count = math.prod(size for _, size in dims)
    span = sum((size - 1) * stride for stride, size in dims) + 1
    if span < count:  # pigeonhole: more indices than offsets they can reach
        return False
    if count > EXACT_OVERLAP_CHECK_LIMIT:
        return False  # too many to count: treated as overlapping, reported as such
    offsets = np.zeros(1, dtype=np.int64)
    for stride, size in dims:
        offsets = (offsets[:, None] + np.arange(size, dtype=np.int64) * stride).ravel()
    return np.unique(offsets).size == offsets.size
