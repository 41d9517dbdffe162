"""The field kinds of dmlpy/ops/fields.py and optional tensors, on throwaway operators declared
with `register=False`: accepted values, each error by its message, copies that share nothing
with the caller, cache keys, the docs entry, the graph function's keywords, the dump tool's
options and the stubs' types."""

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dmlpy as dml
from dmlpy.base.types import FeatureLevel
from dmlpy.frontends.graph_builder import builder_function
from dmlpy.ops.family import Family, FrontEndShape, KernelKind
from dmlpy.ops.fields import (
    FUSABLE_ACTIVATIONS,
    enum_field,
    fused_activation_field,
    int_list_field,
    scale_bias_field,
)
from dmlpy.ops.schema import OPERATORS, OperatorDesc, Support, TensorRole, operator, tensor_field

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import dump_shaders
import gen_docs
import gen_stubs

T = dml.TensorDataType


def _no_kernel(desc, adapter):
    raise AssertionError("these tests build descs, not kernels")


@operator(
    register=False, dml_name="TEST_FIELDS", name="test_fields", formula="OutputTensor = f(InputTensor, BiasTensor)",
    support=(Support(FeatureLevel.LEVEL_1_0, (T.FLOAT32, T.FLOAT16)),),
    same={"data_type": None, "sizes": None}, shader="elementwise.comp", kernel=_no_kernel,
    family=Family("test", KernelKind.OPAQUE, FrontEndShape.OWN, "tests/test_schema_fields.py", "a test's"),
)
class FieldsOperatorDesc(OperatorDesc):
    input_tensor: dml.BufferTensorDesc = tensor_field(TensorRole.INPUT, "InputTensor")
    bias_tensor: dml.BufferTensorDesc | None = tensor_field(TensorRole.INPUT, "BiasTensor", optional=True)
    output_tensor: dml.BufferTensorDesc = tensor_field(TensorRole.OUTPUT, "OutputTensor")
    window_sizes: tuple = int_list_field("WindowSizes", length=2, minimum=1)
    function: dml.ReduceFunction = enum_field(dml.ReduceFunction, "Function", default="SUM")
    transform: dml.MatrixTransform = enum_field(dml.MatrixTransform, "ATransform", default=dml.MatrixTransform.NONE)
    scale_bias: dml.ScaleBias | None = scale_bias_field()
    fused_activation: OperatorDesc | None = fused_activation_field()


def tensor(sizes=(2, 3), data_type=T.FLOAT32):
    return dml.BufferTensorDesc(data_type, sizes)


def desc(**fields):
    values = {"input_tensor": tensor(), "bias_tensor": None, "output_tensor": tensor(), "window_sizes": (2, 2),
              **fields}
    return FieldsOperatorDesc(**values)


def unbound(cls, **scalars):
    """A fused activation's form: the activation's desc with every tensor None."""
    return cls(**dict.fromkeys((t.name for t in cls.schema.tensors), None), **scalars)


def test_not_registered():
    assert "test_fields" not in OPERATORS


def test_accepted_values_and_what_is_stored():
    d = desc(window_sizes=[3, 1], function="ARGMAX", scale_bias=dml.ScaleBias(2, -0.5),
             fused_activation=unbound(dml.ActivationLeakyReluOperatorDesc, alpha=0.1),
             bias_tensor=tensor())
    assert d.window_sizes == (3, 1)  # a list taken as the tuple
    assert d.function is dml.ReduceFunction.ARGMAX  # a name taken as the member
    assert d.transform is dml.MatrixTransform.NONE
    assert d.fused_activation.alpha == 0.1
    assert [t.name for t in FieldsOperatorDesc.schema.present(d)] == ["input_tensor", "bias_tensor", "output_tensor"]
    assert [t.name for t in FieldsOperatorDesc.schema.present(desc())] == ["input_tensor", "output_tensor"]


def test_enum_values_are_directml_s():
    assert [m.name for m in dml.ReduceFunction] == ["ARGMAX", "ARGMIN", "AVERAGE", "L1", "L2", "LOG_SUM", "LOG_SUM_EXP",
                                                   "MAX", "MIN", "MULTIPLY", "SUM", "SUM_SQUARE"]
    assert [m.value for m in dml.ReduceFunction] == list(range(12))
    assert [m.name for m in dml.MatrixTransform] == ["NONE", "TRANSPOSE"]
    assert [m.name for m in dml.AxisDirection] == ["INCREASING", "DECREASING"]


@pytest.mark.parametrize("fields, field, message", [
    ({"function": "sum"}, "function",
     r"FieldsOperatorDesc\.function 'sum' must be a ReduceFunction or one of its names \(ARGMAX, .*SUM_SQUARE\): "
     r"Function is a DML_REDUCE_FUNCTION"),
    ({"function": dml.AxisDirection.INCREASING}, "function", r"must be a ReduceFunction"),
    ({"function": 10}, "function", r"function 10 must be a ReduceFunction"),
    ({"window_sizes": (2,)}, "window_sizes", r"window_sizes \(2,\) has 1 values: WindowSizes has exactly 2"),
    ({"window_sizes": (2, 0)}, "window_sizes", r"window_sizes \(2, 0\) has 0: each of WindowSizes must lie in "
                                               r"\[1, 4294967295\]"),
    ({"window_sizes": (2, 2**32)}, "window_sizes", r"has 4294967296: each of WindowSizes must lie in"),
    ({"window_sizes": (2, True)}, "window_sizes", r"window_sizes \(2, True\) must be a tuple of ints \(WindowSizes\)"),
    ({"window_sizes": "22"}, "window_sizes", r"must be a tuple of ints"),
    ({"scale_bias": (1.0, 0.0)}, "scale_bias", r"scale_bias must be a ScaleBias or None, not tuple"),
    ({"fused_activation": tensor()}, "fused_activation",
     r"fused_activation BufferTensorDesc is not an activation DirectML fuses: FusedActivation must be None or one "
     r"of ACTIVATION_ELU, "),
    ({"fused_activation": unbound(dml.ActivationIdentityOperatorDesc)}, None, None),  # accepted
    ({"bias_tensor": tensor((3, 2))}, "sizes", r"bias_tensor\.sizes \(3, 2\) != input_tensor\.sizes \(2, 3\)"),
    ({"bias_tensor": 5}, "bias_tensor", r"bias_tensor must be a BufferTensorDesc, not int"),
    ({"input_tensor": None}, "input_tensor", r"input_tensor must be a BufferTensorDesc, not NoneType"),
])
def test_errors_name_the_field_the_value_and_the_rule(fields, field, message):
    if message is None:
        desc(**fields)
        return
    with pytest.raises(dml.InvalidArgumentError, match=message) as raised:
        desc(**fields)
    assert raised.value.field == field


def test_scale_bias_must_be_finite_fp32():
    with pytest.raises(dml.InvalidArgumentError, match=r"ScaleBias\.scale nan is not a finite FP32 value: Scale"):
        dml.ScaleBias(float("nan"), 0)
    with pytest.raises(dml.InvalidArgumentError, match=r"ScaleBias\.bias 1e\+39 is not a finite FP32 value"):
        dml.ScaleBias(1, 1e39)
    with pytest.raises(dml.InvalidArgumentError, match=r"ScaleBias\.bias True must be a number"):
        dml.ScaleBias(1, True)
    tampered = dml.ScaleBias(1, 0)
    object.__setattr__(tampered, "scale", float("inf"))  # a frozen dataclass can still be changed so
    with pytest.raises(dml.InvalidArgumentError, match=r"FieldsOperatorDesc\.scale_bias\.scale inf is not a finite "
                                                       r"FP32 value: ScaleBias\.Scale must be finite") as raised:
        desc(scale_bias=tampered)
    assert raised.value.field == "scale_bias"


def test_fused_activation_rules():
    x = tensor()
    with pytest.raises(dml.InvalidArgumentError, match=r"fused_activation ACTIVATION_SOFTMAX is not an activation "
                                                       r"DirectML fuses"):
        desc(fused_activation=dml.ActivationSoftmaxOperatorDesc(x, x))
    with pytest.raises(dml.InvalidArgumentError, match=r"fused_activation\.input_tensor is not None: a fused "
                                                       r"activation's tensors must be None \(DirectML requires its "
                                                       r"InputTensor and OutputTensor to be null\)"):
        desc(fused_activation=dml.ActivationReluOperatorDesc(x, x))
    with pytest.raises(dml.InvalidArgumentError, match=r"ActivationSoftmaxOperatorDesc\.input_tensor must be a "
                                                       r"BufferTensorDesc, not NoneType"):
        unbound(dml.ActivationSoftmaxOperatorDesc)  # not fusable: no unbound form
    with pytest.raises(dml.InvalidArgumentError, match=r"ActivationReluOperatorDesc\.output_tensor must be"):
        dml.ActivationReluOperatorDesc(x, None)  # only every tensor None is the unbound form
    with pytest.raises(dml.InvalidArgumentError, match=r"ActivationCeluOperatorDesc\.alpha 0: Alpha divides"):
        unbound(dml.ActivationCeluOperatorDesc, alpha=0.0)  # the nested desc's own rules still hold


def test_every_fusable_activation_has_an_unbound_form():
    classes = {schema.dml_name: schema.desc_class for schema in OPERATORS.values()}
    for name in FUSABLE_ACTIVATIONS:
        scalars = {s.name: 1.0 for s in classes[name].schema.scalars}
        assert desc(fused_activation=unbound(classes[name], **scalars)).fused_activation.schema.dml_name == name


def test_declaration_refuses_an_optional_first_tensor():
    with pytest.raises(TypeError, match="first tensor cannot be optional"):
        @operator(register=False, dml_name="TEST_BAD", name="test_bad", formula="", support=(), same={},
                  shader="elementwise.comp", kernel=_no_kernel)
        class BadOperatorDesc(OperatorDesc):
            a_tensor: dml.BufferTensorDesc | None = tensor_field(TensorRole.INPUT, "ATensor", optional=True)


def test_copy_shares_nothing_with_the_caller():
    schema = FieldsOperatorDesc.schema
    nested = unbound(dml.ActivationLinearOperatorDesc, alpha=2.0, beta=1.0)
    original = desc(fused_activation=nested, scale_bias=dml.ScaleBias(1.5, 0), bias_tensor=tensor())
    copied = schema.copy(original)
    assert copied == original and schema.key(copied) == schema.key(original)
    assert copied.fused_activation is not nested and copied.scale_bias is not original.scale_bias
    object.__setattr__(nested, "alpha", 9.0)  # the caller changes its nested desc
    object.__setattr__(original.scale_bias, "bias", 7.0)
    assert copied.fused_activation.alpha == 2.0 and copied.scale_bias.bias == 0
    window = [2, 3]
    listed = desc(window_sizes=window)
    window[0] = 99
    assert schema.copy(listed).window_sizes == (2, 3)
    object.__setattr__(original, "window_sizes", [1, 1])  # a subclass or a tamperer: the copy is checked again
    assert schema.copy(original).window_sizes == (1, 1)
    object.__setattr__(original, "function", "NOPE")
    with pytest.raises(dml.InvalidArgumentError, match="function 'NOPE' must be a ReduceFunction"):
        schema.copy(original)


def test_keys():
    key = FieldsOperatorDesc.schema.key
    assert key(desc()) == key(desc(function=dml.ReduceFunction.SUM, window_sizes=[2, 2]))
    assert key(desc(window_sizes=(np.int64(2), 2))) == key(desc())
    assert key(desc(scale_bias=dml.ScaleBias(0.0, 1))) != key(desc(scale_bias=dml.ScaleBias(-0.0, 1)))
    assert key(desc(scale_bias=dml.ScaleBias(1, 0))) != key(desc())
    assert key(desc(function="MAX")) != key(desc())
    assert key(desc(bias_tensor=tensor())) != key(desc())
    relu = unbound(dml.ActivationReluOperatorDesc)
    leaky = [unbound(dml.ActivationLeakyReluOperatorDesc, alpha=a) for a in (0.0, -0.0, 0.0)]
    assert key(desc(fused_activation=relu)) != key(desc())
    assert key(desc(fused_activation=leaky[0])) != key(desc(fused_activation=leaky[1]))
    assert key(desc(fused_activation=leaky[0])) == key(desc(fused_activation=leaky[2]))


def test_devices_and_graphs_take_absent_tensors_as_none():
    schema = FieldsOperatorDesc.schema
    schema.check_device(desc(), FeatureLevel.LEVEL_6_4, False)  # bound as None: DirectML's null binding
    schema.check_device(desc(bias_tensor=tensor()), FeatureLevel.LEVEL_6_4, False)
    relu = unbound(dml.ActivationReluOperatorDesc)
    with pytest.raises(dml.UnsupportedError, match=r"ActivationReluOperatorDesc has every tensor None: that is a "
                                                   r"fused activation's form"):
        relu.schema.check_device(relu, FeatureLevel.LEVEL_6_4, False)
    builder = dml.GraphBuilder()
    x = builder.input(tensor())
    with pytest.raises(dml.InvalidArgumentError, match=r"sources\[1\] is a GraphValue but the desc's bias_tensor is "
                                                       r"None: an input the desc leaves out takes None"):
        builder.add(desc(), [x, x])
    builder.add(desc(), [x, None])
    node = builder_function(schema)(x, None, window_sizes=(2, 2))  # its desc leaves bias out: no edge
    assert builder.graph_desc([node]).desc_of(0).bias_tensor is None


def test_the_fused_activation_is_checked_against_the_device_level():
    celu = unbound(dml.ActivationCeluOperatorDesc)  # DirectML's CELU came at FEATURE_LEVEL_3_0
    with pytest.raises(dml.UnsupportedError, match=r"FieldsOperatorDesc\.fused_activation: ACTIVATION_CELU needs"):
        FieldsOperatorDesc.schema.check_device(desc(bias_tensor=tensor(), fused_activation=celu),
                                               FeatureLevel.LEVEL_2_0, False)


def test_graph_function_keywords_take_the_desc_defaults():
    function = builder_function(FieldsOperatorDesc.schema)
    parameters = __import__("inspect").signature(function).parameters
    assert list(parameters)[:2] == ["input", "bias"]
    assert parameters["function"].default is dml.ReduceFunction.SUM
    assert parameters["transform"].default is dml.MatrixTransform.NONE
    assert parameters["scale_bias"].default is None and parameters["fused_activation"].default is None
    assert parameters["window_sizes"].default is parameters["window_sizes"].empty
    builder = dml.GraphBuilder()
    x = builder.input(tensor())
    y = function(x, x, window_sizes=[1, 2], function="L2", fused_activation=unbound(dml.ActivationTanhOperatorDesc))
    node = builder.nodes[y.node]
    assert node.function is dml.ReduceFunction.L2 and node.window_sizes == (1, 2)
    assert node.fused_activation.schema.dml_name == "ACTIVATION_TANH"


def test_docs_entry():
    text = "\n".join(gen_docs.entry(FieldsOperatorDesc.schema))
    assert "| `bias_tensor` | BiasTensor | input, optional: None is DirectML's null |" in text
    assert ("| `window_sizes` | WindowSizes | tuple of 2 ints in [1, 4294967295]; required |") in text
    assert ("| `function` | Function | ReduceFunction (DML_REDUCE_FUNCTION), or its name: ARGMAX, ARGMIN, AVERAGE, "
            "L1, L2, LOG_SUM, LOG_SUM_EXP, MAX, MIN, MULTIPLY, SUM, SUM_SQUARE; default SUM |") in text
    assert "| `scale_bias` | ScaleBias | ScaleBias(scale, bias) of finite FP32 values, or None (null); default None |" \
        in text
    assert ("| `fused_activation` | FusedActivation | an activation desc with every tensor None (DirectML's null "
            "InputTensor and OutputTensor), one of ELU, HARD_SIGMOID,") in text


def test_dump_options(monkeypatch):
    monkeypatch.setitem(OPERATORS, "test_fields", FieldsOperatorDesc.schema)
    parser = dump_shaders.build_parser()
    args = parser.parse_args(["test_fields", "--dtype", "float32", "--sizes", "2,3", "--window-sizes", "2,1",
                              "--function", "MAX", "--scale-bias", "2,0.5", "--fused-activation", "elu:alpha=0.5"])
    assert dump_shaders.operator_options(FieldsOperatorDesc.schema) >= {"window_sizes", "function", "transform",
                                                                       "scale_bias", "fused_activation"}
    built = dump_shaders.build_desc(args)
    assert built.window_sizes == (2, 1) and built.function is dml.ReduceFunction.MAX
    assert built.scale_bias == dml.ScaleBias(2, 0.5) and built.transform is dml.MatrixTransform.NONE
    assert built.fused_activation == unbound(dml.ActivationEluOperatorDesc, alpha=0.5)
    assert built.bias_tensor is None  # an optional tensor is left out unless its sizes are given
    given = parser.parse_args(["test_fields", "--dtype", "float32", "--sizes", "2,3", "--window-sizes", "2,1",
                               "--bias-tensor-sizes", "2,3"])
    assert dump_shaders.build_desc(given).bias_tensor == dml.BufferTensorDesc(dml.TensorDataType.FLOAT32, (2, 3))
    missing = parser.parse_args(["test_fields", "--dtype", "float32", "--sizes", "2,3"])
    with pytest.raises(dml.InvalidArgumentError, match=r"test_fields needs --window-sizes \(WindowSizes\)"):
        dump_shaders.build_desc(missing)


def test_stub_types():
    stub = gen_stubs.Stub("dmlpy")
    schema = FieldsOperatorDesc.schema
    assert gen_stubs.field_type(stub, schema, "bias_tensor", argument=True) == "BufferTensorDesc | None"
    assert gen_stubs.field_type(stub, schema, "function", argument=False) == "ReduceFunction"
    assert gen_stubs.field_type(stub, schema, "transform", argument=True) == 'MatrixTransform | Literal["NONE", ' \
                                                                             '"TRANSPOSE"]'
    assert gen_stubs.field_type(stub, schema, "window_sizes", argument=True) == "tuple[int, ...] | list[int]"
    assert gen_stubs.field_type(stub, schema, "scale_bias", argument=False) == "ScaleBias | None"
    assert gen_stubs.field_type(stub, schema, "fused_activation", argument=False) == "OperatorDesc | None"
    assert gen_stubs.desc_class(stub, FieldsOperatorDesc)  # every field typed


FUSABLE = [s for _, s in sorted(OPERATORS.items()) if s.dml_name in FUSABLE_ACTIVATIONS]
fp32 = st.floats(width=32, allow_nan=False, allow_infinity=False)


@st.composite
def valid_fields(draw):
    nested = None
    schema = draw(st.none() | st.sampled_from(FUSABLE))
    if schema is not None:  # nonzero scalars: some activations divide by theirs
        nested = unbound(schema.desc_class, **{s.name: draw(fp32.filter(bool)) for s in schema.scalars})
    function = st.sampled_from(list(dml.ReduceFunction)) | st.sampled_from(list(dml.ReduceFunction.__members__))
    return {"window_sizes": draw(st.lists(st.integers(1, 2**32 - 1), min_size=2, max_size=2)),
            "function": draw(function),
            "transform": draw(st.sampled_from(list(dml.MatrixTransform))),
            "scale_bias": draw(st.none() | st.builds(dml.ScaleBias, fp32, fp32)),
            "fused_activation": nested,
            "bias_tensor": draw(st.none() | st.just(tensor()))}


@given(valid_fields())
def test_valid_values_round_trip_through_copy_and_key(fields):
    schema = FieldsOperatorDesc.schema
    original = desc(**fields)
    copied = schema.copy(original)
    assert copied == original
    assert schema.key(copied) == schema.key(original) == schema.key(desc(**fields))
    assert hash(schema.key(copied)) == hash(schema.key(original))
