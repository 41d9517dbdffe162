"""Operator descs, feature levels and device creation: every rule, its error class and HRESULT."""

import pytest

import dmlpy as dml

T = dml.TensorDataType
L = dml.FeatureLevel


def tensor(data_type=T.FLOAT32, sizes=(2, 3), strides=None):
    return dml.BufferTensorDesc(data_type, sizes, strides)


def relu_grad_desc(x=None, dy=None, dx=None):
    return dml.ActivationReluGradOperatorDesc(x or tensor(), dy or tensor(), dx or tensor())


@pytest.mark.parametrize("kwargs, message", [
    (dict(dx=tensor(sizes=(3, 2))),
     "output_gradient_tensor.sizes (3, 2) != input_tensor.sizes (2, 3): "
     "InputTensor, InputGradientTensor, and OutputGradientTensor must have the same Sizes"),
    (dict(dy=tensor(T.FLOAT16)), "input_gradient_tensor.data_type"),
    (dict(dx=tensor(sizes=(1, 2, 3))), "output_gradient_tensor.dimension_count 3 != input_tensor.dimension_count 2"),
    (dict(x=tensor(T.UINT32), dy=tensor(T.UINT32), dx=tensor(T.UINT32)),
     "input_tensor.data_type UINT32 is not supported"),
    (dict(dx=tensor(strides=(0, 1))), "output_gradient_tensor.strides (0, 1)"),
    (dict(dx=tensor(strides=(1, 1))), "must not write any element twice"),
])
def test_invalid_operator_desc(kwargs, message):
    with pytest.raises(dml.InvalidArgumentError) as error:
        relu_grad_desc(**kwargs)
    assert message in str(error.value) and error.value.hresult == 0x80070057


def test_tensor_fields_must_be_tensor_descs():
    with pytest.raises(dml.InvalidArgumentError, match="input_tensor must be a BufferTensorDesc, not NoneType"):
        dml.ActivationReluGradOperatorDesc(None, tensor(), tensor())


def test_interleaved_output_strides_that_never_collide_are_accepted():
    # Sorted by stride the quick proof fails (3 < 2 * 2), but the offsets {0,2,4,3,5,7} are distinct.
    relu_grad_desc(dx=tensor(sizes=(3, 2), strides=(2, 3)), x=tensor(sizes=(3, 2)), dy=tensor(sizes=(3, 2)))


@pytest.mark.parametrize("data_type, level_needed", [(T.FLOAT32, L.LEVEL_3_0), (T.FLOAT16, L.LEVEL_3_0),
                                                     (T.INT32, L.LEVEL_5_1), (T.INT16, L.LEVEL_5_1),
                                                     (T.INT8, L.LEVEL_5_1)])
def test_feature_level_gates_both_ways(device_at, data_type, level_needed):
    desc = relu_grad_desc(tensor(data_type), tensor(data_type), tensor(data_type))
    device_at(level_needed).create_operator(desc)
    below = max(level for level in L if level < level_needed)
    with pytest.raises(dml.UnsupportedError) as error:
        device_at(below).create_operator(desc)
    assert str(level_needed) in str(error.value) and str(below) in str(error.value)
    assert error.value.hresult == 0x887A0004


def test_operator_introduced_after_the_cap_is_unsupported(device_at):
    with pytest.raises(dml.UnsupportedError, match="ACTIVATION_RELU_GRAD needs FEATURE_LEVEL_3_0 but the device is "
                                                   "capped at FEATURE_LEVEL_2_1"):
        device_at(L.LEVEL_2_1).create_operator(relu_grad_desc())


def test_create_device_feature_levels(device_at):
    assert dml.create_device(min_feature_level=L.LEVEL_6_4).feature_level == L.LEVEL_6_4
    assert device_at(L.LEVEL_4_0).feature_level == L.LEVEL_4_0
    with pytest.raises(dml.UnsupportedError, match="above FEATURE_LEVEL_6_4"):
        dml.create_device(min_feature_level=0x7000)
    with pytest.raises(dml.UnsupportedError, match="above the device's cap"):
        dml.create_device(min_feature_level=L.LEVEL_5_0, max_feature_level=L.LEVEL_4_0)
    with pytest.raises(dml.InvalidArgumentError, match="is not a FeatureLevel"):
        dml.create_device(max_feature_level=0x1234)
    with pytest.raises(dml.InvalidArgumentError, match="strict_directml"):
        dml.create_device(strict_directml="yes")


def test_adapter_choice(monkeypatch):
    adapters = dml.list_adapters()
    assert adapters and all(a.max_storage_buffer_range > 0 for a in adapters)
    with dml.create_device(adapter=0) as device:
        assert device.adapter_name == adapters[0].name
        assert device.max_storage_buffer_range == adapters[0].max_storage_buffer_range
    for bad, message in ((len(adapters), "is not an adapter index"), (-1, "is not an adapter index"),
                         (1.5, "must be an adapter index, name or UUID"),
                         (True, "must be an adapter index, name or UUID"), ("no such gpu", "matches no adapter")):
        with pytest.raises(dml.InvalidArgumentError, match=message):
            dml.create_device(adapter=bad)
    monkeypatch.setenv("DMLPY_ADAPTER", str(len(adapters)))
    with pytest.raises(dml.InvalidArgumentError, match="DMLPY_ADAPTER"):
        dml.create_device()
    monkeypatch.setenv("DMLPY_ADAPTER", "0")
    dml.create_device().close()


def test_check_feature_support(device_at):
    device = device_at(L.LEVEL_5_1)
    support = device.check_feature_support(dml.Feature.TENSOR_DATA_TYPE_SUPPORT, T.FLOAT16)
    assert support == dml.FeatureDataTensorDataTypeSupport(True)
    for wide in (T.FLOAT64, T.INT64, T.UINT64):  # pairs of words on any device, from the level that added them
        assert device.check_feature_support(dml.Feature.TENSOR_DATA_TYPE_SUPPORT, wide).is_supported
        assert not device_at(L.LEVEL_4_0).check_feature_support(dml.Feature.TENSOR_DATA_TYPE_SUPPORT, wide).is_supported
    assert not device.check_feature_support(dml.Feature.TENSOR_DATA_TYPE_SUPPORT, T.INT4).is_supported
    levels = device.check_feature_support(dml.Feature.FEATURE_LEVELS, [L.LEVEL_3_0, L.LEVEL_5_1, L.LEVEL_6_4])
    assert levels.max_supported_feature_level == L.LEVEL_5_1
    none = device.check_feature_support(dml.Feature.FEATURE_LEVELS, [L.LEVEL_6_0])
    assert none.max_supported_feature_level is None
    with pytest.raises(dml.InvalidArgumentError):
        device.check_feature_support(dml.Feature.FEATURE_LEVELS, [])
    with pytest.raises(dml.InvalidArgumentError):
        device.check_feature_support(dml.Feature.TENSOR_DATA_TYPE_SUPPORT, 77)
    with pytest.raises(dml.InvalidArgumentError):
        device.check_feature_support(42, None)


def test_compile_rejects_foreign_objects_and_bad_flags(device, device_at):
    op = device.create_operator(relu_grad_desc())
    with pytest.raises(dml.InvalidArgumentError, match="not ExecutionFlags|combination of ExecutionFlags"):
        device.compile_operator(op, flags=0x80)
    with pytest.raises(dml.InvalidArgumentError, match="belongs to another device"):
        device_at(L.LEVEL_6_4).compile_operator(op)
    with pytest.raises(dml.InvalidArgumentError, match="must be an Operator"):
        device.compile_operator(relu_grad_desc())
    with pytest.raises(dml.InvalidArgumentError, match="operator desc"):
        device.create_operator(tensor())
    compiled = device.compile_operator(op, dml.ExecutionFlags.ALLOW_HALF_PRECISION_COMPUTATION)
    assert compiled.binding_properties == dml.BindingProperties(3, 0, 0)
