"""dmlpy: DirectML's operator-descriptor model on any Vulkan device."""

import logging as _logging
from importlib import metadata as _metadata

from . import graph
from .base.adapter import AdapterInfo, AdapterType
from .base.errors import (
    DeviceRemovedError,
    DmlError,
    IndexOutOfRangeError,
    InstallationError,
    InvalidArgumentError,
    ShaderCompilationError,
    UnsupportedError,
)
from .base.tensor_desc import BufferTensorDesc, calc_buffer_tensor_size
from .base.types import ExecutionFlags, Feature, FeatureLevel, TensorDataType, TensorFlags
from .frontends.arrays import asarray, default_device
from .frontends.composites import FRONT_ENDS_COMPOSED as _FRONT_ENDS_COMPOSED
from .frontends.device_array import DeviceArray
from .frontends.generation import fill_value_constant, fill_value_sequence, one_hot
from .frontends.graph_builder import GraphBuilder, GraphValue
from .frontends.matmul import gemm, matmul, matrix_multiply_integer
from .frontends.numpy_api import FRONT_ENDS as _FRONT_ENDS
from .frontends.optimizers import adam_optimizer
from .frontends.prelu import prelu_grad
from .frontends.random import random_generator
from .frontends.reductions import FRONT_ENDS as _REDUCTION_FRONT_ENDS
from .ops.activations import DESCS as _ACTIVATION_DESCS
from .ops.elementwise import DESCS as _ELEMENT_WISE_DESCS
from .ops.elementwise_family import directml_names as _directml_names
from .ops.enums import AxisDirection, IsInfinityMode, MatrixTransform, RandomGeneratorType, ReduceFunction, RoundingMode
from .ops.fields import ScaleBias
from .ops.gemm import GemmOperatorDesc, MatrixMultiplyIntegerOperatorDesc
from .ops.generation import FillValueConstantOperatorDesc, FillValueSequenceOperatorDesc, OneHotOperatorDesc
from .ops.graph import GraphDesc, GraphInputEdge, GraphIntermediateEdge, GraphOutputEdge
from .ops.optimizers import AdamOptimizerOperatorDesc
from .ops.prelu_grad import ActivationParameterizedReluGradOperatorDesc
from .ops.random import RandomGeneratorOperatorDesc
from .ops.reductions import (
    ArgMaxOperatorDesc,
    ArgMinOperatorDesc,
    CumulativeProductOperatorDesc,
    CumulativeSummationOperatorDesc,
    ReduceOperatorDesc,
    TopK1OperatorDesc,
    TopKOperatorDesc,
)
from .ops.schema import OPERATORS
from .runtime.binding import BindingProperties, BindingTable, Buffer, BufferBinding
from .runtime.caches import CacheLimits
from .runtime.command_list import CommandList
from .runtime.device import (
    CompiledGraph,
    CompiledOperator,
    Device,
    Execution,
    FeatureDataFeatureLevels,
    FeatureDataTensorDataTypeSupport,
    Operator,
    create_device,
)
from .runtime.device_profiles import list_device_profiles
from .runtime.guard import GuardViolationError
from .runtime.vulkan_info import list_adapters

__all__ = [
    "OPERATORS",
    "graph",
    "ActivationParameterizedReluGradOperatorDesc",
    "AdamOptimizerOperatorDesc",
    "AdapterInfo",
    "AdapterType",
    "ArgMaxOperatorDesc",
    "ArgMinOperatorDesc",
    "AxisDirection",
    "BindingProperties",
    "BindingTable",
    "Buffer",
    "BufferBinding",
    "BufferTensorDesc",
    "CacheLimits",
    "CommandList",
    "CompiledGraph",
    "CompiledOperator",
    "CumulativeProductOperatorDesc",
    "CumulativeSummationOperatorDesc",
    "Device",
    "DeviceArray",
    "DeviceRemovedError",
    "DmlError",
    "Execution",
    "ExecutionFlags",
    "Feature",
    "FeatureDataFeatureLevels",
    "FeatureDataTensorDataTypeSupport",
    "FeatureLevel",
    "FillValueConstantOperatorDesc",
    "FillValueSequenceOperatorDesc",
    "GemmOperatorDesc",
    "GraphBuilder",
    "GraphDesc",
    "GraphInputEdge",
    "GraphIntermediateEdge",
    "GraphOutputEdge",
    "GraphValue",
    "GuardViolationError",
    "IndexOutOfRangeError",
    "InstallationError",
    "InvalidArgumentError",
    "IsInfinityMode",
    "MatrixMultiplyIntegerOperatorDesc",
    "MatrixTransform",
    "OneHotOperatorDesc",
    "Operator",
    "RandomGeneratorOperatorDesc",
    "RandomGeneratorType",
    "ReduceFunction",
    "ReduceOperatorDesc",
    "RoundingMode",
    "ScaleBias",
    "ShaderCompilationError",
    "TensorDataType",
    "TensorFlags",
    "TopK1OperatorDesc",
    "TopKOperatorDesc",
    "UnsupportedError",
    "adam_optimizer",
    "asarray",
    "calc_buffer_tensor_size",
    "create_device",
    "default_device",
    "fill_value_constant",
    "fill_value_sequence",
    "gemm",
    "list_adapters",
    "list_device_profiles",
    "matmul",
    "matrix_multiply_integer",
    "one_hot",
    "prelu_grad",
    "random_generator",
]

try:
    __version__ = _metadata.version("dmlpy")
except _metadata.PackageNotFoundError:  # a checkout imported without being installed
    __version__ = "0+unknown"

# Every activation's desc classes and NumPy front ends come from its row in the table.
globals().update(_ACTIVATION_DESCS)
globals().update(_ELEMENT_WISE_DESCS)
globals().update(_FRONT_ENDS)
globals().update(_REDUCTION_FRONT_ENDS)
globals().update(_FRONT_ENDS_COMPOSED)
# DirectML's names (dml.logical_greater_than, dml.if_) for the element-wise front ends named as NumPy names them.
_DIRECTML_NAMES = {name: _FRONT_ENDS[operator_name]
                   for name, operator_name in _directml_names(_REDUCTION_FRONT_ENDS).items()}
globals().update(_DIRECTML_NAMES)
__all__ += [*_ACTIVATION_DESCS, *_ELEMENT_WISE_DESCS, *_FRONT_ENDS, *_REDUCTION_FRONT_ENDS, *_FRONT_ENDS_COMPOSED,
            *_DIRECTML_NAMES]

# dmlpy logs to the "dmlpy" logger (compiles, cache use, device choice, fallbacks) and, as a
# library, prints nothing unless the application configures logging.
_logging.getLogger(__name__).addHandler(_logging.NullHandler())
