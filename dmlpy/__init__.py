"""dmlpy: DirectML's operator-descriptor model on any Vulkan device."""

from importlib import metadata as _metadata

from .activations import DESCS as _ACTIVATION_DESCS
from .binding import BindingProperties, BindingTable, Buffer, BufferBinding
from .caches import CacheLimits
from .command_list import CommandList
from .device import (
    CompiledGraph,
    CompiledOperator,
    Device,
    Execution,
    FeatureDataFeatureLevels,
    FeatureDataTensorDataTypeSupport,
    Operator,
    create_device,
)
from .device_array import DeviceArray, asarray
from .device_profiles import list_device_profiles
from .errors import (
    DeviceRemovedError,
    DmlError,
    InstallationError,
    InvalidArgumentError,
    ShaderCompilationError,
    UnsupportedError,
)
from .graph import GraphBuilder, GraphDesc, GraphInputEdge, GraphIntermediateEdge, GraphOutputEdge, GraphValue
from .guard import GuardViolationError
from .numpy_api import FRONT_ENDS as _FRONT_ENDS
from .numpy_api import default_device, prelu_grad
from .operators import ActivationParameterizedReluGradOperatorDesc
from .schema import OPERATORS
from .tensor_desc import BufferTensorDesc, calc_buffer_tensor_size
from .types import ExecutionFlags, Feature, FeatureLevel, TensorDataType, TensorFlags
from .vulkan_info import AdapterInfo, AdapterType, list_adapters

__all__ = [
    "OPERATORS",
    "ActivationParameterizedReluGradOperatorDesc",
    "AdapterInfo",
    "AdapterType",
    "BindingProperties",
    "BindingTable",
    "Buffer",
    "BufferBinding",
    "BufferTensorDesc",
    "CacheLimits",
    "CommandList",
    "CompiledGraph",
    "CompiledOperator",
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
    "GraphBuilder",
    "GraphDesc",
    "GraphInputEdge",
    "GraphIntermediateEdge",
    "GraphOutputEdge",
    "GraphValue",
    "GuardViolationError",
    "InstallationError",
    "InvalidArgumentError",
    "Operator",
    "ShaderCompilationError",
    "TensorDataType",
    "TensorFlags",
    "UnsupportedError",
    "asarray",
    "calc_buffer_tensor_size",
    "create_device",
    "default_device",
    "list_adapters",
    "list_device_profiles",
    "prelu_grad",
]

try:
    __version__ = _metadata.version("dmlpy")
except _metadata.PackageNotFoundError:  # a checkout imported without being installed
    __version__ = "0+unknown"

# Every activation's desc classes and NumPy front ends come from its row in the table.
globals().update(_ACTIVATION_DESCS)
globals().update(_FRONT_ENDS)
__all__ += [*_ACTIVATION_DESCS, *_FRONT_ENDS]
