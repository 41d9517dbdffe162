"""ONNX's backend node tests, run through dmlpy's NumPy front ends.

ONNX ships, inside its wheel, the generators of its backend node tests: for each case a
one-node model, its inputs and the outputs NumPy computed for them (`collect_testcases`).
Those outputs are an independent reference, the one ONNX Runtime and every ONNX backend is
held to. `RUNNERS` maps an ONNX operator to a function that runs one node with dmlpy's public
front ends (or a DirectML desc where no front end takes the attribute) and returns its
outputs. A case outside DirectML's model (a type DirectML has no tensor for, a dimension of
size 0, a sequence) raises `NotCovered` with the reason. A case DirectML's rules refuse
(an operator that does not take the type) is listed in `REFUSED` with the rule: dmlpy must
refuse it with a DmlError, so a refusal that stops is noticed. docs/onnx.md gives the counts
and every reason.
"""

from __future__ import annotations

import functools
import re
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import ml_dtypes
import numpy as np

import dmlpy as dml


class NotCovered(Exception):
    """A node test outside what DirectML (and so dmlpy) offers; the message says why."""


@dataclass(frozen=True)
class GraphNode:
    op_type: str
    attributes: dict
    inputs: tuple[str, ...]      # "" for an omitted optional input
    outputs: tuple[str, ...]


@dataclass(frozen=True)
class NodeCase:
    """One of ONNX's cases: a model of one node, or of several (an `_expanded` function body),
    its inputs and the outputs ONNX computed."""
    name: str
    opset: int
    nodes: tuple[GraphNode, ...]
    input_names: tuple[str, ...]
    output_names: tuple[str, ...]
    inputs: tuple                # np.ndarray each
    outputs: tuple
    rtol: float
    atol: float

    @property
    def op_types(self) -> frozenset[str]:
        return frozenset(node.op_type for node in self.nodes)


@dataclass(frozen=True)
class Node:
    """A node as its runner sees it: the values of its inputs (np.ndarray, DeviceArray, or None)."""
    op_type: str
    opset: int
    attributes: dict
    inputs: tuple


# The element types DirectML has (FLOAT64 and the 64-bit integers where the device supports
# them); ONNX's strings, 8-bit and 4-bit floats, 4-bit integers and complex numbers have none.
DIRECTML_DTYPES = {np.dtype(t) for t in (np.float32, np.float16, ml_dtypes.bfloat16, np.float64, np.int8, np.int16,
                                         np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64, np.bool_)}


def onnx_value(item):
    """ONNX keeps some data (its 8-bit and 4-bit floats, bfloat16) as TensorProto."""
    from onnx import numpy_helper

    if hasattr(item, "raw_data") or hasattr(item, "float_data"):
        return numpy_helper.to_array(item)
    return np.asarray(item) if isinstance(item, np.generic) else item


@functools.cache
def node_cases() -> tuple[NodeCase, ...]:
    """Every case ONNX's installed package generates with one data set and operators of the
    default domain only (its generators print NumPy's warnings for the infinities they build on
    purpose)."""
    from onnx import helper
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = collect_testcases(None)
    found = []
    for case in cases:
        graph = case.model.graph
        if len(case.data_sets) != 1 or any(node.domain not in ("", "ai.onnx") for node in graph.node):
            continue
        inputs, outputs = ([onnx_value(item) for item in items] for items in case.data_sets[0])
        found.append(NodeCase(
            name=case.name, opset=next(o.version for o in case.model.opset_import if o.domain in ("", "ai.onnx")),
            nodes=tuple(GraphNode(node.op_type, {a.name: helper.get_attribute_value(a) for a in node.attribute},
                                  tuple(node.input), tuple(node.output)) for node in graph.node),
            input_names=tuple(i.name for i in graph.input)[:len(inputs)],
            output_names=tuple(o.name for o in graph.output), inputs=tuple(inputs), outputs=tuple(outputs),
            rtol=case.rtol, atol=case.atol))
    return tuple(found)


def check_types(arrays: Sequence, tensors: bool = True) -> None:
    """NotCovered unless each array is of a type DirectML has and, for `tensors` (data a DirectML
    operator reads or writes, not an axis list or a count), of a shape DirectML's tensors take."""
    for array in arrays:
        if array is None:
            continue
        if not isinstance(array, np.ndarray):
            raise NotCovered(f"an input of type {type(array).__name__}: DirectML operators take tensors")
        if array.dtype not in DIRECTML_DTYPES:
            raise NotCovered(f"element type {array.dtype}: DirectML has no such tensor data type")
        if tensors and 0 in array.shape:
            raise NotCovered(f"shape {array.shape}: DirectML's tensors have no dimension of size 0")
        if tensors and array.ndim > 8:
            raise NotCovered(f"{array.ndim} dimensions: DirectML's tensors have 1 to 8")


def check_case(case: NodeCase) -> None:
    """NotCovered if the case lies outside DirectML's tensor model: its outputs, and the graph
    inputs its nodes read as tensors, must be DirectML tensors; every input must have a type
    DirectML has."""
    check_types(case.outputs)
    check_types(case.inputs, tensors=False)
    read_as_tensors = {name for node in case.nodes for position, name in enumerate(node.inputs)
                       if position not in PARAMETER_INPUTS.get(node.op_type, ())}
    check_types([x for name, x in zip(case.input_names, case.inputs) if name in read_as_tensors])


def as_onnx_output(result, like: np.ndarray) -> np.ndarray:
    """dmlpy's logical operators write UINT8 0/1 (DirectML's rule) where ONNX writes bool."""
    result = host(result)
    if like.dtype == np.bool_ and result.dtype == np.uint8:
        if not np.isin(result, (0, 1)).all():
            raise AssertionError(f"a logical output holds values other than 0 and 1: {np.unique(result)}")
        return result.astype(np.bool_)
    return result


def host(value) -> np.ndarray:
    """A value the runner needs on the host (an axis, a count, a bound)."""
    return value.numpy() if isinstance(value, dml.DeviceArray) else np.asarray(value)


def scalar(value):
    return None if value is None else host(value).reshape(()).item()


def drop_axes(result, axes: Sequence[int]):
    """ONNX's keepdims=0: the reduced dims removed (a reshape, for host and device arrays alike)."""
    return result.reshape(tuple(n for i, n in enumerate(result.shape) if i not in axes))


# --- runners: (node) -> outputs ------------------------------------------------------------------

Runner = Callable[[Node], Sequence]


def unary(function: Callable) -> Runner:
    return lambda node: [function(node.inputs[0])]


def binary(function: Callable) -> Runner:
    return lambda node: [function(node.inputs[0], node.inputs[1])]


def with_attributes(function: Callable, **names: tuple[str, object]) -> Runner:
    """A unary front end whose keyword arguments are ONNX attributes: keyword=(attribute, default)."""
    def run(node: Node):
        kwargs = {keyword: node.attributes.get(attribute, default) for keyword, (attribute, default) in names.items()}
        return [function(node.inputs[0], **kwargs)]
    return run


def variadic(function: Callable) -> Runner:
    """ONNX's Max, Min and Sum take one or more inputs; DirectML's operators take two."""
    def run(node: Node):
        result = node.inputs[0] if len(node.inputs) > 1 else dml.element_wise_identity(node.inputs[0])
        for other in node.inputs[1:]:
            result = function(result, other)
        return [result]
    return run


def mean(node: Node):
    if len(node.inputs) == 2:
        return [dml.element_wise_mean(*node.inputs)]
    total = variadic(dml.add)(node)[0]
    return [dml.divide(total, np.asarray(len(node.inputs), total.dtype))]


def clip(node: Node):
    x = node.inputs[0]
    if node.opset < 11:
        low, high = node.attributes.get("min"), node.attributes.get("max")
    else:
        low = scalar(node.inputs[1]) if len(node.inputs) > 1 else None
        high = scalar(node.inputs[2]) if len(node.inputs) > 2 else None
    if np.issubdtype(x.dtype, np.integer):
        limits = np.iinfo(x.dtype)
        low = limits.min if low is None else low
        high = limits.max if high is None else high
        return [dml.clip1(x, min=low, max=high)]
    # DirectML's Min and Max are finite: no bound is FP32's widest, as ONNX Runtime's DirectML
    # provider passes it.
    widest = float(np.finfo(np.float32).max)
    return [dml.clip(x, -widest if low is None else low, widest if high is None else high)]


def modulus(node: Node):
    if node.attributes.get("fmod", 0):
        return [dml.modulus_truncate(*node.inputs)]
    return [dml.modulus_floor(*node.inputs)]


def bit_shift(node: Node):
    direction = node.attributes["direction"]
    direction = direction.decode() if isinstance(direction, bytes) else direction
    shift = dml.bit_shift_left if direction == "LEFT" else dml.bit_shift_right
    return [shift(*node.inputs)]


def is_inf(node: Node):
    negative = node.attributes.get("detect_negative", 1)
    positive = node.attributes.get("detect_positive", 1)
    modes = {(1, 1): dml.IsInfinityMode.EITHER, (0, 1): dml.IsInfinityMode.POSITIVE,
             (1, 0): dml.IsInfinityMode.NEGATIVE}
    if (negative, positive) not in modes:
        raise NotCovered("IsInf detecting neither infinity: DirectML's InfinityMode has no such mode")
    return [dml.isinf(node.inputs[0], infinity_mode=modes[negative, positive])]


ONNX_TO_NUMPY = {1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32, 7: np.int64,
                 9: np.bool_, 10: np.float16, 11: np.float64, 12: np.uint32, 13: np.uint64, 16: ml_dtypes.bfloat16}


def cast(node: Node):
    to = node.attributes["to"]
    if to not in ONNX_TO_NUMPY:
        raise NotCovered(f"cast to ONNX element type {to}: DirectML has no such tensor data type")
    dtype = np.dtype(ONNX_TO_NUMPY[to])
    if dtype == np.bool_:
        raise NotCovered("cast to bool: DirectML's CAST has no boolean type (UINT8 holds 0/1 masks)")
    return [dml.cast(node.inputs[0], dtype)]


def cast_like(node: Node):
    dtype = node.inputs[1].dtype
    if dtype not in DIRECTML_DTYPES:
        raise NotCovered(f"element type {dtype}: DirectML has no such tensor data type")
    if dtype == np.bool_:
        raise NotCovered("cast to bool: DirectML's CAST has no boolean type (UINT8 holds 0/1 masks)")
    return [dml.cast(node.inputs[0], dtype)]


REDUCE_FUNCTIONS = {"ReduceSum": "SUM", "ReduceMean": "AVERAGE", "ReduceMax": "MAX", "ReduceMin": "MIN",
                    "ReduceProd": "MULTIPLY", "ReduceL1": "L1", "ReduceL2": "L2", "ReduceLogSum": "LOG_SUM",
                    "ReduceLogSumExp": "LOG_SUM_EXP", "ReduceSumSquare": "SUM_SQUARE"}


# Inputs that are parameters of the ONNX operator (axes, counts, bounds, a type to copy), read
# on the host: an empty axis list is a parameter, not an empty tensor.
PARAMETER_INPUTS = {"CumSum": {1}, "CumProd": {1}, "TopK": {1}, "Clip": {1, 2}, "CastLike": {1}, "OneHot": {1, 2},
                    **{op_type: {1} for op_type in REDUCE_FUNCTIONS}}


def reduce(node: Node):
    x = node.inputs[0]
    if "axes" in node.attributes:
        axes = node.attributes["axes"]
    elif len(node.inputs) > 1 and node.inputs[1] is not None:
        axes = host(node.inputs[1]).tolist()
    else:
        axes = []
    if not axes:
        if node.attributes.get("noop_with_empty_axes", 0):
            return [dml.element_wise_identity(x)]
        axes = list(range(x.ndim))
    axes = tuple(sorted({a % x.ndim for a in axes}))
    result = dml.reduce(x, REDUCE_FUNCTIONS[node.op_type], axes)
    if not node.attributes.get("keepdims", 1):
        result = drop_axes(result, axes)
    return [result]


def arg_reduce(node: Node):
    x = node.inputs[0]
    axis = node.attributes.get("axis", 0) % x.ndim
    keepdims = bool(node.attributes.get("keepdims", 1))
    if not node.attributes.get("select_last_index", 0):
        function = dml.argmax if node.op_type == "ArgMax" else dml.argmin
        return [function(x, axis=axis, keepdims=keepdims).astype(np.int64)]
    # ONNX's select_last_index is DirectML's AxisDirection.DECREASING, which the NumPy-style
    # front end does not take: run the desc.
    desc_class = dml.ArgMaxOperatorDesc if node.op_type == "ArgMax" else dml.ArgMinOperatorDesc
    kept = tuple(1 if i == axis else n for i, n in enumerate(x.shape))
    result = run_desc(lambda tensors: desc_class(tensors[0], tensors[1], axes=(axis,),
                                                 axis_direction=dml.AxisDirection.DECREASING),
                      [host(x)], [(kept, np.int64)])[0]
    return [result if keepdims else drop_axes(result, (axis,))]


def run_desc(make_desc: Callable, inputs: Sequence[np.ndarray], outputs: Sequence[tuple]) -> list[np.ndarray]:
    """Build, compile, bind and execute one DirectML desc on the default device."""
    device = dml.default_device()
    tensors = [dml.BufferTensorDesc(dml.TensorDataType[a.dtype.name.upper()], a.shape) for a in inputs]
    tensors += [dml.BufferTensorDesc(dml.TensorDataType[np.dtype(dtype).name.upper()], shape)
                for shape, dtype in outputs]
    compiled = device.compile_operator(device.create_operator(make_desc(tensors)))
    buffers = [device.create_buffer(tensor=t) for t in tensors]
    for buffer, array in zip(buffers, inputs):
        buffer.write(np.ascontiguousarray(array))
    scratch = compiled.binding_properties.temporary_resource_size
    temporary = device.create_buffer(scratch) if scratch else None
    device.execute(device.create_binding_table(compiled, inputs=buffers[:len(inputs)],
                                               outputs=buffers[len(inputs):], temporary=temporary))
    return [buffer.read() for buffer in buffers[len(inputs):]]


def cumulative(function: Callable) -> Runner:
    def run(node: Node):
        axis = scalar(node.inputs[1])
        return [function(node.inputs[0], axis=int(axis), exclusive=bool(node.attributes.get("exclusive", 0)),
                         reverse=bool(node.attributes.get("reverse", 0)))]
    return run


def top_k(node: Node):
    if not node.attributes.get("sorted", 1):
        raise NotCovered("TopK with sorted=0: DirectML's TOP_K always sorts")
    values, indices = dml.top_k(node.inputs[0], int(scalar(node.inputs[1])), axis=node.attributes.get("axis", -1),
                                largest=bool(node.attributes.get("largest", 1)))
    return [values, indices.astype(np.int64)]


def along_axis(function: Callable) -> Runner:
    """Softmax, LogSoftmax and Hardmax: from opset 13 over the one axis named (-1 by default);
    before it, over every axis from `axis` on, the input seen as 2-D."""
    def run(node: Node):
        x = node.inputs[0]
        if node.opset >= 13:
            axes = (node.attributes.get("axis", -1) % x.ndim,)
        else:
            axes = tuple(range(node.attributes.get("axis", 1) % x.ndim, x.ndim))
        return [function(x, axes=axes)]
    return run


def gemm(node: Node):
    a, b = node.inputs[:2]
    c = node.inputs[2] if len(node.inputs) > 2 else None
    return [dml.gemm(a, b, c, trans_a=bool(node.attributes.get("transA", 0)),
                     trans_b=bool(node.attributes.get("transB", 0)), alpha=node.attributes.get("alpha", 1.0),
                     beta=node.attributes.get("beta", 1.0) if c is not None else 0.0)]


def matmul_integer(node: Node):
    return [dml.matrix_multiply_integer(*node.inputs)]


def one_hot(node: Node):
    indices, depth, values = node.inputs
    return [dml.one_hot(host(indices), int(scalar(depth)), host(values), axis=node.attributes.get("axis", -1))]


def gelu(node: Node):
    approximate = node.attributes.get("approximate", "none")
    approximate = approximate.decode() if isinstance(approximate, bytes) else approximate
    return [dml.gelu(node.inputs[0], approximate=approximate)]


RUNNERS: dict[str, Runner] = {
    "Abs": unary(dml.abs), "Acos": unary(dml.acos), "Acosh": unary(dml.acosh), "Asin": unary(dml.asin),
    "Asinh": unary(dml.asinh), "Atan": unary(dml.atan), "Atanh": unary(dml.atanh), "Ceil": unary(dml.ceil),
    "Cos": unary(dml.cos), "Cosh": unary(dml.cosh), "Erf": unary(dml.erf), "Exp": unary(dml.exp),
    "Floor": unary(dml.floor), "Log": unary(dml.log), "Neg": unary(dml.negate), "Reciprocal": unary(dml.recip),
    "Sin": unary(dml.sin), "Sinh": unary(dml.sinh), "Sqrt": unary(dml.sqrt), "Tan": unary(dml.tan),
    "Tanh": unary(dml.tanh), "Sign": unary(dml.sign), "IsNaN": unary(dml.isnan), "Not": unary(dml.logical_not),
    "BitwiseNot": unary(dml.bitwise_not), "Relu": unary(dml.relu), "Sigmoid": unary(dml.sigmoid),
    "Softsign": unary(dml.softsign), "Softplus": unary(dml.softplus),
    "Identity": unary(dml.element_wise_identity),
    "Round": unary(dml.round),
    "Elu": with_attributes(dml.elu, alpha=("alpha", 1.0)),
    "Celu": with_attributes(dml.celu, alpha=("alpha", 1.0)),
    "LeakyRelu": with_attributes(dml.leaky_relu, alpha=("alpha", 0.01)),
    "HardSigmoid": with_attributes(dml.hard_sigmoid, alpha=("alpha", 0.2), beta=("beta", 0.5)),
    "HardSwish": unary(dml.hard_swish),
    "Selu": with_attributes(dml.scaled_elu, alpha=("alpha", 1.67326319217681884765625),
                            gamma=("gamma", 1.05070102214813232421875)),
    "ThresholdedRelu": with_attributes(dml.thresholded_relu, alpha=("alpha", 1.0)),
    "Shrink": with_attributes(dml.shrink, bias=("bias", 0.0), threshold=("lambd", 0.5)),
    "Gelu": gelu,
    "Swish": with_attributes(dml.swish, sigmoid_input_scale=("alpha", 1.0)),
    "IsInf": is_inf,
    "Add": binary(dml.add), "Sub": binary(dml.subtract), "Mul": binary(dml.multiply), "Div": binary(dml.divide),
    "Pow": binary(dml.pow), "And": binary(dml.logical_and), "Or": binary(dml.logical_or),
    "Xor": binary(dml.logical_xor), "Equal": binary(dml.equal), "Greater": binary(dml.greater),
    "GreaterOrEqual": binary(dml.greater_equal), "Less": binary(dml.less), "LessOrEqual": binary(dml.less_equal),
    "BitwiseAnd": binary(dml.bitwise_and), "BitwiseOr": binary(dml.bitwise_or),
    "BitwiseXor": binary(dml.bitwise_xor), "PRelu": binary(dml.parameterized_relu),
    "Where": lambda node: [dml.where(*node.inputs)],
    "BitShift": bit_shift, "Mod": modulus, "Clip": clip,
    "Max": variadic(dml.maximum), "Min": variadic(dml.minimum), "Sum": variadic(dml.add), "Mean": mean,
    "Cast": cast, "CastLike": cast_like,
    **{op_type: reduce for op_type in REDUCE_FUNCTIONS},
    "ArgMax": arg_reduce, "ArgMin": arg_reduce,
    "CumSum": cumulative(dml.cumsum), "CumProd": cumulative(dml.cumprod),
    "TopK": top_k,
    "Softmax": along_axis(dml.softmax), "LogSoftmax": along_axis(dml.log_softmax),
    "Hardmax": along_axis(dml.hardmax),
    "Gemm": gemm, "MatMul": binary(dml.matmul), "MatMulInteger": matmul_integer,
    "OneHot": one_hot,
}


# Cases DirectML's rules refuse, by name: a pattern and the rule. dmlpy must raise a DmlError.
REFUSED: dict[str, str] = {
    r"test_bitshift_(left|right)_int.*": "DirectML's BIT_SHIFT_LEFT and BIT_SHIFT_RIGHT take unsigned integers only",
    r"test_cum(sum|prod)_(?!.*int32).*": "DirectML's CUMULATIVE_SUMMATION and CUMULATIVE_PRODUCT take no FLOAT64, "
                                         "ONNX's data for these cases",
    r"test_cast(like)?_(BFLOAT16_to_FLOAT|FLOAT_to_BFLOAT16)(_expanded)?|test_celu_bfloat16_expanded":
        "DirectML's CAST takes no BFLOAT16",
    r"test_onehot_with_(negative_)?axis": "DirectML's ONE_HOT takes integer indices, not ONNX's FLOAT32 ones",
    r"test_(max|min)_float64": "DirectML's ELEMENT_WISE_MAX and MIN take no FLOAT64",
    r"test_mod_.*float64.*": "DirectML's MODULUS_TRUNCATE and MODULUS_FLOOR take no FLOAT64",
    r"test_pow_types_(float32_int64|int64_float32|float32_uint64|int64_int64)":
        "DirectML's ELEMENT_WISE_POW takes no 64-bit integers",
    r"test_pow_types_int32_float32": "an integer base with a float exponent: DirectML takes it, dmlpy computes "
                                     "integer powers with integers only and refuses it (docs/operators.md)",
    r"test_reduce_log_sum_exp_.*(example|random)(_expanded)?":
        "DirectML's REDUCE and ELEMENT_WISE_EXP take no FLOAT64, ONNX's data for these cases",
}


def refusal(case: NodeCase) -> str | None:
    """The DirectML rule that refuses this case, or None."""
    return next((reason for pattern, reason in REFUSED.items() if re.fullmatch(pattern, case.name)), None)


def constant(node: Node) -> list[np.ndarray]:
    """ONNX's Constant: its one value attribute as an array."""
    (attribute, value), = node.attributes.items()
    if attribute == "value":
        return [onnx_value(value)]
    kinds = {"value_float": np.float32, "value_floats": np.float32, "value_int": np.int64, "value_ints": np.int64}
    if attribute not in kinds:
        raise NotCovered(f"a Constant's {attribute}: DirectML operators take numeric tensors")
    return [np.asarray(value, kinds[attribute])]


def runs(case: NodeCase) -> bool:
    """Whether dmlpy has every operator of the case's graph."""
    return all(op_type in RUNNERS or op_type == "Constant" for op_type in case.op_types)


def run_case(case: NodeCase, on_device: bool = False) -> list[np.ndarray]:
    """dmlpy's outputs for one case, in ONNX's types: its nodes in order, each through its
    runner, on NumPy arrays or (`on_device`) on device arrays, whose element-wise chains and
    reductions are deferred and fused. NotCovered if DirectML has no way."""
    check_case(case)
    values = dict(zip(case.input_names, (dml.asarray(x) if on_device and x.size else x for x in case.inputs)))
    for graph_node in case.nodes:
        node = Node(graph_node.op_type, case.opset, graph_node.attributes,
                    tuple(values[name] if name else None for name in graph_node.inputs))
        results = constant(node) if node.op_type == "Constant" else RUNNERS[node.op_type](node)
        values.update(zip(graph_node.outputs, results))
    return [as_onnx_output(values[name], like) for name, like in zip(case.output_names, case.outputs)]
