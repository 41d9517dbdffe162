"""The NumPy front ends of the matrix-multiplication family: `gemm` (DirectML's GEMM, with
NumPy's broadcasting of the batch dimensions and of C) and `matmul` (NumPy's matmul on top
of it), on NumPy arrays or device arrays (`a @ b`)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ..base.errors import InvalidArgumentError, UnsupportedError, shown
from ..base.tensor_desc import BufferTensorDesc, calc_buffer_tensor_size, packed_strides
from ..base.types import TensorDataType, data_type_for_numpy
from ..ops.enums import MatrixTransform
from ..ops.gemm import GemmOperatorDesc, MatrixMultiplyIntegerOperatorDesc
from ..ops.schema import OperatorDesc
from ..runtime.binding import MINIMUM_BUFFER_TENSOR_ALIGNMENT
from ..runtime.device import Device
from .array_operators import ARRAY_OPERATORS
from .arrays import as_array, as_device, asarray, check_out
from .call_cache import run_bound
from .device_array import DeviceArray
from .numpy_api import refuse_untaken_data_types

MAX_GEMM_DIMS = 4  # DirectML's GEMM: { BatchCount, ChannelCount, M, N } at most


def _transform(value, argument: str) -> MatrixTransform:
    """A bool (True: transposed), a MatrixTransform or its name."""
    if isinstance(value, (bool, np.bool_)):
        return MatrixTransform.TRANSPOSE if value else MatrixTransform.NONE
    if isinstance(value, MatrixTransform):
        return value
    if isinstance(value, str) and value.upper() in MatrixTransform.__members__:
        return MatrixTransform[value.upper()]
    raise InvalidArgumentError(f"{argument} {shown(value)} must be a bool, a MatrixTransform or its name",
                               argument)


def _operand(value, argument: str) -> np.ndarray | DeviceArray:
    array = value if isinstance(value, DeviceArray) else as_array(value, argument)
    if array.ndim < 1:
        raise InvalidArgumentError(f"{argument} is 0-d: a matrix product takes arrays of at least 1 dim", argument)
    return array


def _broadcast_desc(array: np.ndarray | DeviceArray, shape: tuple[int, ...],
                    sizes: tuple[int, ...]) -> BufferTensorDesc:
    """`array` (a host array, read packed, or a device array or view, read through its own
    strides: `a.T @ b` reads a's buffer transposed, no copy), seen as `shape` (its own, or
    matmul's with a dim added), read as `sizes`: NumPy's broadcasting (dims aligned from the
    right, zero strides where it has 1)."""
    data_type = data_type_for_numpy(array.dtype)
    own = packed_strides(shape)
    if isinstance(array, DeviceArray):
        own = tuple(s // array.dtype.itemsize for s in array.strides)
        if len(shape) > array.ndim:  # matmul's 1-D operand: the added dim has size 1
            own = (0, *own) if shape[0] == 1 and shape[1:] == array.shape else (*own, 0)
    lead = len(sizes) - len(shape)
    strides = tuple([0] * lead + [0 if n == 1 and size != 1 else stride
                                  for n, size, stride in zip(shape, sizes[lead:], own)])
    if isinstance(array, DeviceArray):
        return array.strided_desc(tuple(sizes), strides)
    if shape == tuple(sizes):
        return BufferTensorDesc(data_type, sizes)
    return BufferTensorDesc(data_type, sizes, strides,
                            total_tensor_size_in_bytes=calc_buffer_tensor_size(data_type, (array.size,)))


def _batch_shape(a_batch: tuple[int, ...], b_batch: tuple[int, ...], a_shape, b_shape, name: str) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(a_batch, b_batch))
    except ValueError:
        raise InvalidArgumentError(
            f"{name}: a has shape {a_shape} and b {b_shape}, whose batch dims {a_batch} and {b_batch} do not "
            "broadcast together (NumPy's rule: equal, or 1)", "shape") from None


def _run(desc, arrays: list, out, device: Device | None, shape: tuple[int, ...], dtype: np.dtype | None = None):
    """The product on host arrays (a NumPy result, or `out`) or on device arrays (a new
    DeviceArray), of `dtype` (default: the first operand's)."""
    present = [x for x in arrays if x is not None]
    dtype = dtype or present[0].dtype
    if any(isinstance(x, DeviceArray) for x in present):
        owner = next(x.device for x in present if isinstance(x, DeviceArray))
        if device is not None and device is not owner:
            raise InvalidArgumentError("device names another device than the arrays': pass arrays of that device "
                                       "(dmlpy.asarray(a, device=...)) or leave device out", "device")
        if any(isinstance(x, DeviceArray) and x.device is not owner for x in present):
            raise InvalidArgumentError("the arrays live on different devices: a product reads arrays of one",
                                       "device")
        inputs = tuple(None if x is None else x if isinstance(x, DeviceArray) else asarray(x, owner) for x in arrays)
        # Deferred as element-wise results are: the element-wise chain that reads it becomes its
        # store's epilogue (one kernel); the device accepts the desc (or not) now.
        result = DeviceArray.deferred(owner, shape, dtype, owner.create_operator(desc).desc, inputs)
        if out is None:
            return result
        check_out(out, shape, result.dtype)
        out[...] = result.numpy()
        return out
    device = as_device(device)
    if out is not None:
        check_out(out, shape, dtype)
    compiled = device.compile_cached(desc)
    packed = [None if x is None else np.ascontiguousarray(x).reshape(-1) for x in arrays]
    result = out if out is not None else np.empty(shape, dtype)

    def work(binding):
        for buffer, values in zip(binding.buffers, packed):
            if values is not None:
                buffer.write(values)
        device.execute(binding.table)
        result[...] = binding.buffers[-1].read(dtype, result.size).reshape(shape)

    run_bound(device, compiled, None, work)
    return result


def gemm(a: ArrayLike | DeviceArray, b: ArrayLike | DeviceArray, c: ArrayLike | DeviceArray | None = None, *,
         trans_a: bool | MatrixTransform | str = False, trans_b: bool | MatrixTransform | str = False,
         alpha: float = 1.0, beta: float = 0.0, fused_activation: OperatorDesc | None = None,
         out: np.ndarray | None = None,
         device: Device | None = None) -> np.ndarray | DeviceArray:
    """DML_OPERATOR_GEMM: `fused_activation(alpha * op(a) @ op(b) + beta * c)`, op a transpose
    of the last two dims where `trans_a` / `trans_b`. a and b have 2 to 4 dims (their leading
    batch dims broadcast as NumPy's do), c broadcasts to the result's shape; float32, float16
    or bfloat16, all one dtype. The sum over K runs in DirectML's documented order
    (docs/numerics.md): the same bits on every device. Device arrays give a DeviceArray."""
    trans_a, trans_b = _transform(trans_a, "trans_a"), _transform(trans_b, "trans_b")
    a, b = _operand(a, "a"), _operand(b, "b")
    # C only broadcasts, so it may be 0-d (NumPy's and ONNX's scalar bias).
    c = None if c is None else c if isinstance(c, DeviceArray) else as_array(c, "c")
    for name, x in (("a", a), ("b", b)):
        if not 2 <= x.ndim <= MAX_GEMM_DIMS:
            raise InvalidArgumentError(f"gemm: {name} has {x.ndim} dims: GEMM takes 2 to {MAX_GEMM_DIMS} (use matmul "
                                       "for 1-D operands)", name)
    return _product(a, b, c, trans_a, trans_b, alpha, beta, fused_activation, out, device, "gemm")


def _product(a, b, c, trans_a: MatrixTransform, trans_b: MatrixTransform, alpha, beta, fused_activation, out,
             device, name: str, shapes: tuple[tuple[int, ...], tuple[int, ...]] | None = None,
             squeeze: tuple[int, ...] = ()):
    """GEMM of a and b seen as `shapes` (theirs by default); the result without the dims
    `squeeze` names (matmul's 1-D operands: the packed bytes are the same)."""
    arrays = {"a": a, "b": b, **({"c": c} if c is not None else {})}
    refuse_untaken_data_types(GemmOperatorDesc.schema, [data_type_for_numpy(x.dtype) for x in arrays.values()])
    dtypes = {x.dtype for x in arrays.values()}
    if len(dtypes) > 1:
        listed = ", ".join(f"{k} {x.dtype}" for k, x in arrays.items())
        raise InvalidArgumentError(f"{name}: {listed}: the operands must have one dtype (convert one first, e.g. "
                                   "b.astype(a.dtype))", "data_type")
    a_shape, b_shape = shapes or (a.shape, b.shape)
    m, k = a_shape[-1:-3:-1] if trans_a is MatrixTransform.TRANSPOSE else a_shape[-2:]
    k_b, n = b_shape[-1:-3:-1] if trans_b is MatrixTransform.TRANSPOSE else b_shape[-2:]
    if k != k_b:
        raise InvalidArgumentError(
            f"{name}: a has shape {a.shape} and b {b.shape}: a's K ({k}{', transposed' if trans_a.value else ''}) "
            f"must equal b's ({k_b}{', transposed' if trans_b.value else ''})", "shape")
    batch = _batch_shape(a_shape[:-2], b_shape[:-2], a.shape, b.shape, name)
    if len(batch) + 2 > MAX_GEMM_DIMS:
        raise InvalidArgumentError(f"{name}: the product has {len(batch) + 2} dims (a {a.shape}, b {b.shape}): "
                                   f"GEMM's tensors have at most {MAX_GEMM_DIMS}", "shape")
    sizes = (*batch, m, n)
    if c is not None:
        try:
            if tuple(np.broadcast_shapes(c.shape, sizes)) != sizes:
                raise ValueError
        except ValueError:
            raise InvalidArgumentError(f"{name}: c has shape {c.shape}, which does not broadcast to the product's "
                                       f"shape {sizes}", "c") from None
    shape = tuple(n for d, n in enumerate(sizes) if d - len(sizes) not in squeeze)
    if 0 in (*sizes, k):  # DirectML's sizes are at least 1: NumPy's result, made here
        return _empty_product(name, a, b, shape, k, out)
    desc = GemmOperatorDesc(_broadcast_desc(a, a_shape, (*batch, *a_shape[-2:])),
                            _broadcast_desc(b, b_shape, (*batch, *b_shape[-2:])),
                            None if c is None else _broadcast_desc(c, c.shape, sizes),
                            BufferTensorDesc(data_type_for_numpy(a.dtype), sizes), trans_a, trans_b, alpha, beta,
                            fused_activation)
    runner, limit = _past_a_segment(desc, [a, b, c], device)
    if limit is None:
        return _run(desc, [a, b, c], out, device, shape)
    return _delivered(_in_pieces(desc, a, b, c, a_shape, b_shape, runner, limit, name).reshape(shape), out, runner,
                      [a, b, c])


def _past_a_segment(desc, arrays: list, device: Device | None) -> tuple[Device, int | None]:
    """The device a product runs on (the device arrays', which `device` must name if given),
    and the bytes a segment binds where one of the desc's tensors is larger (else None)."""
    owner = next((x.device for x in arrays if isinstance(x, DeviceArray)), None)
    if owner is not None and device is not None and device is not owner:
        raise InvalidArgumentError("device names another device than the arrays': pass arrays of that device "
                                   "(dmlpy.asarray(a, device=...)) or leave device out", "device")
    runner = owner or as_device(device)
    limit = runner.segment_size - MINIMUM_BUFFER_TENSOR_ALIGNMENT
    largest = max(getattr(desc, t.name).total_tensor_size_in_bytes for t in desc.schema.present(desc))
    return runner, limit if largest > limit else None


def _delivered(product: np.ndarray, out, device: Device, arrays: list):
    """A product computed in blocks on host copies, as its call returns it: in `out`, or a
    new DeviceArray where the operands were device arrays, else the NumPy array."""
    if out is not None:
        check_out(out, product.shape, product.dtype)
        out[...] = product
        return out
    return asarray(product, device) if any(isinstance(x, DeviceArray) for x in arrays) else product


def _blocks(sizes: tuple[int, ...], rows: int, columns: int):
    """Each block's (batch index, rows, columns) over a product of `sizes`."""
    for batch in np.ndindex(*sizes[:-2]):
        for top in range(0, sizes[-2], rows):
            for left in range(0, sizes[-1], columns):
                yield batch, slice(top, top + rows), slice(left, left + columns)


def _block_steps(m: int, n: int, k: int, itemsize: int, output_itemsize: int, limit: int,
                 name: str) -> tuple[int, int]:
    """The rows and columns of a product's blocks whose operands (rows x K of A, K x columns
    of B) and result each fit in `limit` bytes; a K past `limit` (one row of A) is refused."""
    if k * itemsize > limit:
        raise UnsupportedError(f"{name} sums {k} products (a row of {k * itemsize} bytes) at once, and this device "
                               f"binds at most {limit} bytes of a tensor at once (maxStorageBufferRange): take a "
                               "smaller K per call")
    columns = max(1, min(n, limit // (k * itemsize), limit // output_itemsize))
    return max(1, min(m, limit // (k * itemsize), limit // (columns * output_itemsize))), columns


def _in_pieces(desc, a, b, c, a_shape: tuple[int, ...], b_shape: tuple[int, ...], device: Device, limit: int,
               name: str) -> np.ndarray:
    """GEMM whose tensors do not fit in one buffer segment, on host copies: each batch's product
    in blocks of rows of op(A) and columns of op(B) whose tensors each fit in `limit` bytes.
    Every output element still sums its K products in the documented order, so the bits are
    those of one call; a K past a segment (one row of A) is refused."""
    sizes = desc.output_tensor.sizes
    m, n = sizes[-2:]
    host = [x.numpy() if isinstance(x, DeviceArray) else np.asarray(x) for x in (a, b)]
    a_rows, b_rows = (np.broadcast_to(x.reshape(shape), (*sizes[:-2], *shape[-2:]))
                      for x, shape in zip(host, (a_shape, b_shape)))
    if desc.trans_a is MatrixTransform.TRANSPOSE:
        a_rows = np.swapaxes(a_rows, -1, -2)
    if desc.trans_b is MatrixTransform.TRANSPOSE:
        b_rows = np.swapaxes(b_rows, -1, -2)
    rows, columns = _block_steps(m, n, a_rows.shape[-1], a_rows.dtype.itemsize, a_rows.dtype.itemsize, limit, name)
    biases = None if c is None else np.broadcast_to(c.numpy() if isinstance(c, DeviceArray) else np.asarray(c), sizes)
    result = np.empty(sizes, a_rows.dtype)
    for batch, these_rows, these_columns in _blocks(sizes, rows, columns):
        block = (*batch, these_rows, these_columns)
        result[block] = _product(
            a_rows[(*batch, these_rows)], b_rows[(*batch, slice(None), these_columns)],
            None if biases is None else biases[block], MatrixTransform.NONE, MatrixTransform.NONE, desc.alpha,
            desc.beta, desc.fused_activation, None, device, name)
    return result


def _empty_product(name: str, a, b, shape: tuple[int, ...], k: int, out):
    """matmul of operands with no elements: NumPy's result (an empty array, or +0 everywhere
    for K = 0). GEMM itself takes no empty tensor, and its K = 0 would need a rule for C."""
    if name != "matmul":
        raise InvalidArgumentError(f"{name}: a has shape {a.shape} and b {b.shape}: GEMM's sizes are at least 1 "
                                   "(DirectML's); matmul gives NumPy's result for empty operands", "shape")
    values = np.zeros(shape, a.dtype)
    if out is not None:
        check_out(out, shape, a.dtype)
        out[...] = values
        return out
    owner = next((x.device for x in (a, b) if isinstance(x, DeviceArray)), None)
    return values if owner is None else asarray(values, owner)


def matmul(a: ArrayLike | DeviceArray, b: ArrayLike | DeviceArray, *, out: np.ndarray | None = None,
           device: Device | None = None) -> np.ndarray | DeviceArray:
    """NumPy's matmul by GEMM: a 1-D a is a row (1, K), a 1-D b a column (K, 1), and that dim is
    removed from the result; batch dims broadcast (the result has at most 4 dims). Sums run in
    GEMM's documented order, not NumPy's: compare bits with the order in docs/numerics.md."""
    a, b = _operand(a, "a"), _operand(b, "b")
    squeeze = (*((-2,) if a.ndim == 1 else ()), *((-1,) if b.ndim == 1 else ()))
    shapes = ((1, *a.shape) if a.ndim == 1 else a.shape, (*b.shape, 1) if b.ndim == 1 else b.shape)
    if max(map(len, shapes)) > MAX_GEMM_DIMS:
        raise InvalidArgumentError(f"matmul: a has shape {a.shape} and b {b.shape}: GEMM's tensors have at most "
                                   f"{MAX_GEMM_DIMS} dims", "shape")
    return _product(a, b, None, MatrixTransform.NONE, MatrixTransform.NONE, 1.0, 0.0, None, out, device, "matmul",
                    shapes, squeeze)


def _zero_point(value, argument: str, matrix, dim: int, ndim: int) -> np.ndarray | None:
    """A zero point as DirectML lays it out: None; one value (sizes all 1); or one per row of A
    (dim -2) or column of B (dim -1): a 1-D array of that length."""
    if value is None:
        return None
    zero = as_array(value, argument)
    if zero.dtype != matrix.dtype:
        raise InvalidArgumentError(f"{argument} has dtype {zero.dtype} but its matrix {matrix.dtype}: a zero point has "
                                   "its matrix's dtype", "data_type")
    count = matrix.shape[dim]
    if zero.size not in (1, count) or zero.ndim > 1:
        raise InvalidArgumentError(f"{argument} has shape {zero.shape}: a zero point is one value or a 1-D array of "
                                   f"{count} (one per {'row of a' if dim == -2 else 'column of b'})", argument)
    sizes = [1] * ndim
    sizes[dim] = zero.size
    return zero.reshape(sizes)


def matrix_multiply_integer(a: ArrayLike | DeviceArray, b: ArrayLike | DeviceArray,
                            a_zero_point: ArrayLike | None = None, b_zero_point: ArrayLike | None = None, *,
                            out: np.ndarray | None = None, device: Device | None = None) -> np.ndarray | DeviceArray:
    """DML_OPERATOR_MATRIX_MULTIPLY_INTEGER: (a - a_zero_point) @ (b - b_zero_point) in int32,
    exactly. a and b are int8 or uint8 of 2 to 4 dims with equal batch dims; a zero point is
    one value, or a 1-D array with one per row of a (per column of b)."""
    # Its descs are packed: a view is copied first (a deferred element-wise result of its graph).
    a, b = (x.contiguous() if isinstance(x, DeviceArray) else x for x in (_operand(a, "a"), _operand(b, "b")))
    for name, x in (("a", a), ("b", b)):
        if not 2 <= x.ndim <= MAX_GEMM_DIMS:
            raise InvalidArgumentError(f"matrix_multiply_integer: {name} has {x.ndim} dims: it takes 2 to "
                                       f"{MAX_GEMM_DIMS}", name)
    schema = MatrixMultiplyIntegerOperatorDesc.schema
    a_type, b_type = data_type_for_numpy(a.dtype), data_type_for_numpy(b.dtype)
    refuse_untaken_data_types(schema, [a_type, a_type, b_type, b_type])  # schema order: A, its zero point, B, its
    if a.shape[:-2] != b.shape[:-2] or a.shape[-1] != b.shape[-2]:
        raise InvalidArgumentError(f"matrix_multiply_integer: a has shape {a.shape} and b {b.shape}: their batch dims "
                                   "must be equal and a's K must equal b's", "shape")
    zeros = [_zero_point(a_zero_point, "a_zero_point", a, -2, a.ndim),
             _zero_point(b_zero_point, "b_zero_point", b, -1, b.ndim)]
    packed = [None if x is None else BufferTensorDesc(data_type_for_numpy(x.dtype), x.shape)
              for x in (a, zeros[0], b, zeros[1])]
    sizes = (*a.shape[:-1], b.shape[-1])
    desc = MatrixMultiplyIntegerOperatorDesc(*packed, BufferTensorDesc(TensorDataType.INT32, sizes))
    runner, limit = _past_a_segment(desc, [a, b], device)
    if limit is None:
        return _run(desc, [a, zeros[0], b, zeros[1]], out, device, sizes, np.dtype(np.int32))
    # Past a buffer segment: blocks of rows of A and columns of B (and of their zero points) on
    # host copies; the sums are exact, so any blocking gives the one call's result.
    a_host, b_host = (x.numpy() if isinstance(x, DeviceArray) else np.asarray(x) for x in (a, b))
    rows, columns = _block_steps(a.shape[-2], b.shape[-1], a.shape[-1], 1, 4, limit, "matrix_multiply_integer")
    product = np.empty(sizes, np.int32)
    for batch, these_rows, these_columns in _blocks(sizes, rows, columns):
        a_zero, b_zero = (None if z is None else z.reshape(-1)[these if z.size > 1 else slice(None)]
                          for z, these in zip(zeros, (these_rows, these_columns)))
        product[(*batch, these_rows, these_columns)] = matrix_multiply_integer(
            a_host[(*batch, these_rows)], b_host[(*batch, slice(None), these_columns)], a_zero, b_zero, device=runner)
    return _delivered(product, out, runner, [a, b])


FRONT_ENDS = {"gemm": gemm, "matmul": matmul, "matrix_multiply_integer": matrix_multiply_integer}
ARRAY_OPERATORS["matmul"] = matmul
