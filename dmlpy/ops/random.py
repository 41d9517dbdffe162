"""The random family: DirectML's RANDOM_GENERATOR, pseudo-random UINT32 bits from a
generator state that the caller keeps (Philox 4x32-10, the one generator DirectML defines).

The state is six UINT32 words: a 128-bit counter (elements 0 to 3) and a 64-bit key
(elements 4 and 5). The output's elements, in row-major order, are the words of Philox
4x32-10 blocks: block j encrypts counter + j under the key, and its four words are elements
4j to 4j + 3 (the last block's words past the output's end are dropped). The output state
is the counter advanced by ceil(outputSize / 4), the key unchanged. The kernel family is
shaders/philox.comp (kernels/random.py plans it).
"""

from __future__ import annotations

from ..base.errors import InvalidArgumentError
from ..base.tensor_desc import BufferTensorDesc
from ..base.types import FeatureLevel as FL
from ..base.types import TensorDataType as T
from ..kernels.random import plan_philox
from .enums import RandomGeneratorType
from .family import Family, FrontEndShape, KernelKind
from .fields import enum_field
from .schema import OperatorDesc, Support, TensorRole, operator, tensor_field

FAMILY = Family(
    "random", KernelKind.OPAQUE, FrontEndShape.OWN, "dmlpy/ops/random.py",
    "DirectML's RANDOM_GENERATOR: Philox 4x32-10 bits from a counter and key the caller keeps, and the state "
    "advanced for the next call (frontends/random.py)")

PHILOX_STATE_WORDS = 6  # a 128-bit counter and a 64-bit key

RANDOM_NOTES = (
    "DirectML's page gives the state's layout (elements 0 to 3 the 128-bit counter, 4 and 5 the 64-bit key) and "
    "the counter's advance (ceil(outputSize / 4)), not the order of the counter's words or of the output's. dmlpy "
    "follows Random123, which the page cites: element 0 is the counter's least significant word (Random123's "
    "ctr[0], the word its increment carries from), elements 4 and 5 are key[0] and key[1], and output elements 4j "
    "to 4j + 3 (row-major, whatever the strides) are the words of philox4x32_10(counter + j, key) in order, so "
    "Random123's known-answer vectors hold for 4 elements from any state. The advance carries across all four "
    "words and wraps at 2^128. (The page's worked example, 0x...74746c65 plus 324,855, prints the counter less "
    "324,855, not plus: dmlpy adds.)")


def _check_random(desc) -> None:
    """Philox's state tensors are { [1, ...,] 6 }: six UINT32 words, every leading size 1."""
    owner = type(desc).__name__
    for name in ("input_state_tensor", "output_state_tensor"):
        tensor = getattr(desc, name)
        if tensor is None:
            continue
        sizes = tensor.sizes
        if sizes[-1] != PHILOX_STATE_WORDS or any(size != 1 for size in sizes[:-1]):
            raise InvalidArgumentError(
                f"{owner}.{name}.sizes {sizes}: for DML_RANDOM_GENERATOR_TYPE_PHILOX_4X32_10 the state tensor must "
                f"have sizes {{1,1,1,6}} (from FEATURE_LEVEL_4_0 any count of leading 1s, then 6)", "sizes")


def _output_sizes(inputs: dict[str, BufferTensorDesc], fields: dict) -> dict[str, tuple[int, ...]]:
    """The output state is shaped as the input state (a graph function's output takes the
    input state's sizes too: six words of bits)."""
    return {"output_state_tensor": inputs["input_state_tensor"].sizes}


def _plan_random(desc, adapter):
    return plan_philox(desc.input_state_tensor, desc.output_tensor, desc.output_state_tensor, adapter)


@operator(
    dml_name="RANDOM_GENERATOR", family=FAMILY, name="random_generator",
    formula="OutputTensor = Philox4x32_10(InputStateTensor), OutputStateTensor = InputStateTensor's counter + "
            "ceil(outputSize / 4)",
    support=(Support(FL.LEVEL_3_0, (T.UINT32,), range(4, 5)), Support(FL.LEVEL_4_0, (T.UINT32,), range(1, 9))),
    same={"dimension_count": ("input_state_tensor", "output_state_tensor"),
          "sizes": ("input_state_tensor", "output_state_tensor")},
    shader="philox.comp", kernel=_plan_random, check=_check_random, in_place=False,
    output_sizes=_output_sizes, notes=RANDOM_NOTES,
)
class RandomGeneratorOperatorDesc(OperatorDesc):
    """DML_RANDOM_GENERATOR_OPERATOR_DESC: uniformly distributed UINT32 bits of any sizes from a
    Philox 4x32-10 state; `output_state_tensor` may be None (DirectML's null: no state out)."""

    input_state_tensor: BufferTensorDesc = tensor_field(TensorRole.INPUT, "InputStateTensor", "state")
    output_tensor: BufferTensorDesc = tensor_field(TensorRole.OUTPUT, "OutputTensor", "bits")
    output_state_tensor: BufferTensorDesc | None = tensor_field(TensorRole.OUTPUT, "OutputStateTensor", "new_state",
                                                                optional=True)
    type: RandomGeneratorType = enum_field(RandomGeneratorType, "Type", "PHILOX_4X32_10")


DESCS = (RandomGeneratorOperatorDesc,)
