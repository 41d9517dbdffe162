"""The one table that renders expressions (dmlpy/ir/expr.py) to GLSL, and how each data
type's stored bits are read and written. Values are SSA: one statement per node."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from ..base.errors import UnsupportedError
from ..base.types import TensorDataType as T
from ..base.types import data_type_info
from .expr import BOOL, FLOAT, INTEGER, INTEGER_ZERO, REDUCTIONS, STORED, Expr, integer_constant, where

# How each primitive becomes one GLSL statement: `{out}` is the new value's name, `{0}`...
# its operands'. Values are SSA: one statement per node. FP32 arithmetic and order go
# through numeric.glsl's dml_add, dml_mul, dml_less...: `precise` hardware operations, or
# exact ones that never hand the hardware a subnormal where the device may flush them.
# The dml_* functions live in shaders/numeric.glsl and shaders/transcendental.glsl.
RENDER: dict[str, str] = {
    "input": "uint {out} = bits[{value}];",
    # +0's bits, known only at run time: a driver that sees a zero may fold x + 0.0 to x even in a
    # `precise` sum (lavapipe does), which is -0 for x = -0 where IEEE gives +0.
    "zero": "uint {out} = params.element_count == 0u ? 1u : 0u;",
    "scalar": "float {out} = uintBitsToFloat(params.scalar_bits[{value}]);",
    "const": "float {out} = uintBitsToFloat({value_bits}u);",
    "float": "float {out} = {decoded};",
    "add": "float {out} = dml_add({0}, {1});",
    "sub": "float {out} = dml_sub({0}, {1});",
    "mul": "float {out} = dml_mul({0}, {1});",
    "div": "float {out} = dml_div({0}, {1});",
    "neg": "float {out} = dml_neg({0});",
    "abs": "float {out} = dml_abs({0});",
    "min": "float {out} = dml_min({0}, {1});",
    "max": "float {out} = dml_max({0}, {1});",
    "gt": "bool {out} = dml_less({1}, {0});",
    "ge": "bool {out} = dml_less_equal({1}, {0});",
    "lt": "bool {out} = dml_less({0}, {1});",
    "le": "bool {out} = dml_less_equal({0}, {1});",
    "eq": "bool {out} = dml_equal({0}, {1});",
    "and": "bool {out} = {0} && {1};",
    "or": "bool {out} = {0} || {1};",
    "not": "bool {out} = !{0};",
    "isnan": "bool {out} = dml_isnan({0});",
    "isnan_stored": "bool {out} = {decoded};",
    "isinf": "bool {out} = (floatBitsToUint({0}) & 0x7FFFFFFFu) == 0x7F800000u;",
    "positive": "bool {out} = {decoded};",
    "select": "{type} {out} = {0} ? {1} : {2};",
    "exp": "float {out} = dml_exp({0});",
    "expm1": "float {out} = dml_expm1({0});",
    "tanh": "float {out} = dml_tanh({0});",
    "sigmoid": "float {out} = dml_sigmoid({0});",
    "softplus": "float {out} = dml_softplus({0});",
    "sigmoid_slope": "float {out} = dml_sigmoid_slope({0});",
    "tanh_slope": "float {out} = dml_tanh_slope({0});",
    "log": "float {out} = dml_log({0});",
    "gelu": "float {out} = dml_gelu({0});",
    "product_error": "float {out} = dml_product_error({0}, {1});",
    "gelu_slope": "float {out} = dml_gelu_slope({0});",
    "exp_diff": "float {out} = dml_exp_diff({0}, {1});",
    "sqrt": "float {out} = dml_sqrt({0});",
    "sin": "float {out} = dml_sin({0});",
    "cos": "float {out} = dml_cos({0});",
    "tan": "float {out} = dml_tan({0});",
    "asin": "float {out} = dml_asin({0});",
    "acos": "float {out} = dml_acos({0});",
    "atan": "float {out} = dml_atan({0});",
    "sinh": "float {out} = dml_sinh({0});",
    "cosh": "float {out} = dml_cosh({0});",
    "asinh": "float {out} = dml_asinh({0});",
    "acosh": "float {out} = dml_acosh({0});",
    "atanh": "float {out} = dml_atanh({0});",
    "erf": "float {out} = dml_erf({0});",
    "atan2": "float {out} = dml_atan2({0}, {1});",
    "pow": "float {out} = dml_pow({0}, {1});",
    "fmod": "float {out} = dml_fmod({0}, {1});",
    "round": "uint {out} = {encoded};",
    "narrow": "uint {out} = {0}.x & {mask}u;",
    "one_bits": "uint {out} = {one:#x}u;",
    "to_wide": "uvec2 {out} = {decoded};",
    "wide_zero": "uvec2 {out} = uvec2(0u);",
    "wide_scalar": "uvec2 {out} = uvec2(params.scalar_bits[{value}], 0u);",
    "wide_scalar_signed": "uvec2 {out} = uvec2(params.scalar_bits[{value}], int(params.scalar_bits[{value}]) < 0 ? "
                          "0xFFFFFFFFu : 0u);",
    "wide_mul": "uvec2 {out} = dml_wide_mul({0}, {1});",
    "wide_sub_float": "uvec2 {out} = dml_wide_sub_float({0}, floatBitsToUint({1}));",
    "wide_add_float": "uvec2 {out} = dml_wide_sub_float({0}, floatBitsToUint({1}) ^ 0x80000000u);",
    "wide_gt_float": "bool {out} = dml_wide_gt_float({0}, floatBitsToUint({1}));",
    "wide_ge_float": "bool {out} = dml_wide_ge_float({0}, floatBitsToUint({1}));",
    "wide_lt_float": "bool {out} = dml_wide_lt_float({0}, floatBitsToUint({1}));",
    "wide_le_float": "bool {out} = dml_wide_le_float({0}, floatBitsToUint({1}));",
    "never": "bool {out} = false;",
    "wide_const": "uvec2 {out} = uvec2({value[0]}u, {value[1]}u);",
    "wide_add": "uvec2 {out} = dml_wide_add({0}, {1});",
    "wide_sub": "uvec2 {out} = dml_wide_sub({0}, {1});",
    "wide_mul_low": "uvec2 {out} = dml_wide_mul_low({0}, {1});",
    "wide_pow": "uvec2 {out} = dml_wide_pow({0}, {1});",
    "wide_div": "uvec2 {out} = dml_wide_div({0}, {1});",
    "wide_mod_trunc": "uvec2 {out} = dml_wide_mod({0}, {1}, false);",
    "wide_mod_floor": "uvec2 {out} = dml_wide_mod({0}, {1}, true);",
    "wide_half": "uvec2 {out} = dml_wide_half({0});",
    "wide_gt": "bool {out} = dml_wide_less({1}, {0});",
    "wide_ge": "bool {out} = !dml_wide_less({0}, {1});",
    "wide_lt": "bool {out} = dml_wide_less({0}, {1});",
    "wide_le": "bool {out} = !dml_wide_less({1}, {0});",
    "wide_eq": "bool {out} = {0} == {1};",
    "wide_from_float": "uvec2 {out} = dml_wide_from_float(floatBitsToUint({0}));",
    # Vulkan's integer-to-float conversions are correctly rounded.
    "wide_to_float": "float {out} = int({0}.y) < 0 ? float(int({0}.x)) : float({0}.x);",
    "floor": "float {out} = dml_floor({0});",
    "ceil": "float {out} = dml_ceil({0});",
    "trunc": "float {out} = dml_trunc({0});",
    "round_half_even": "float {out} = dml_round_half_even({0});",
    "round_half_away": "float {out} = dml_round_half_away({0});",
    "bits_and": "uint {out} = {0} & {1};",
    "bits_or": "uint {out} = {0} | {1};",
    "bits_xor": "uint {out} = {0} ^ {1};",
    "bits_not": "uint {out} = ~{0} & {mask}u;",
    "bits_shift_left": "uint {out} = {1} >= {width}u ? 0u : ({0} << {1}) & {mask}u;",
    "bits_shift_right": "uint {out} = {1} >= {width}u ? 0u : {0} >> {1};",
    "bits_count": "uvec2 {out} = uvec2(uint(bitCount({0})), 0u);",
    "nonzero": "bool {out} = {0} != 0u;",
    "is_element": "bool {out} = element == {0}.x;",  # the reduction kernel's element index in its row
    # A reduction, once its stage has run: its total for the row (shaders/reduce.comp).
    "reduce_sum": "float {out} = uintBitsToFloat(totals[{slot}]);",
    "reduce_product": "float {out} = uintBitsToFloat(totals[{slot}]);",
    "reduce_max": "float {out} = uintBitsToFloat(totals[{slot}]);",
    "reduce_min": "float {out} = uintBitsToFloat(totals[{slot}]);",
    "index_of_max": "uvec2 {out} = uvec2(totals[{slot}], 0u);",
    "index_of_min": "uvec2 {out} = uvec2(totals[{slot}], 0u);",
    "reduce_wrapping_sum": "uvec2 {out} = total_as_wide(totals[{slot}]);",
    "reduce_wrapping_product": "uvec2 {out} = total_as_wide(totals[{slot}]);",
    "reduce_integer_max": "uvec2 {out} = total_as_wide(totals[{slot}]);",
    "reduce_integer_min": "uvec2 {out} = total_as_wide(totals[{slot}]);",
}

# The 64-bit kernel's table (shaders/wide.comp ARITHMETIC): inputs of one 64-bit type, every
# stored value and integer a uvec2 of (low, high) words. The integer and bit primitives whose
# pattern depends on the width or the signedness are its own (wide.comp's functions); the ones
# on exact integers, conditions and FP32 numbers are RENDER's; nothing else has a 64-bit form.
_WIDE_SHARED = ("const", "scalar", "and", "or", "not", "select", "wide_zero", "wide_const", "wide_add", "wide_sub",
                "wide_mul_low", "wide_eq")
WIDE_RENDER: dict[str, str] = {
    **{op: RENDER[op] for op in _WIDE_SHARED},
    "input": "uvec2 {out} = words[{value}];",
    "zero": "uvec2 {out} = uvec2(0u);",
    "to_wide": "uvec2 {out} = {0};",
    # A fused node's output as the unfused operator stores it: a 64-bit value as it is, a
    # narrower one (a comparison's UINT8) zero-extended, as the kernel reads a narrow input.
    "narrow": "uvec2 {out} = {0} & low_bits({width}u);",
    "one_bits": "uvec2 {out} = uvec2({one:#x}u, 0u);",
    "nonzero": "bool {out} = {0} != uvec2(0u);",
    "wide_scalar": "uvec2 {out} = uvec2(params.scalar_bits[{value}], params.scalar_bits[{value} + 1]);",
    "wide_scalar_signed": "uvec2 {out} = uvec2(params.scalar_bits[{value}], params.scalar_bits[{value} + 1]);",
    "wide_from_float": "uvec2 {out} = from_fp32(floatBitsToUint({0}));",
    "wide_lt": "bool {out} = less64({0}, {1});",
    "wide_gt": "bool {out} = less64({1}, {0});",
    "wide_le": "bool {out} = !less64({1}, {0});",
    "wide_ge": "bool {out} = !less64({0}, {1});",
    "wide_lt_float": "bool {out} = order_against_fp32({0}, floatBitsToUint({1})) == -1;",
    "wide_gt_float": "bool {out} = order_against_fp32({0}, floatBitsToUint({1})) == 1;",
    "wide_le_float": "bool {out} = order_against_fp32({0}, floatBitsToUint({1})) <= 0;",
    "wide_ge_float": "bool {out} = uint(order_against_fp32({0}, floatBitsToUint({1}))) <= 1u;",
    "wide_div": "uvec2 {out} = divided64({0}, {1});",
    "wide_mod_trunc": "uvec2 {out} = remainder64({0}, {1}, false);",
    "wide_mod_floor": "uvec2 {out} = remainder64({0}, {1}, true);",
    "bits_and": "uvec2 {out} = {0} & {1};",
    "bits_or": "uvec2 {out} = {0} | {1};",
    "bits_xor": "uvec2 {out} = {0} ^ {1};",
    "bits_not": "uvec2 {out} = ~{0};",
    "bits_count": "uvec2 {out} = uvec2(uint(bitCount({0}.x) + bitCount({0}.y)), 0u);",
    "bits_shift_left": "uvec2 {out} = {1}.y != 0u || {1}.x >= 64u ? uvec2(0u) : shifted_left({0}, {1}.x);",
    "bits_shift_right": "uvec2 {out} = {1}.y != 0u || {1}.x >= 64u ? uvec2(0u) : shifted_right({0}, {1}.x);",
}


@dataclass(frozen=True)
class StoredForm:
    """How GLSL reads and writes one data type's stored bits (shaders/numeric.glsl); each
    pattern takes the bits (or the FP32 number, for `from_float`) as {0}."""

    to_float: str
    positive: str
    nan: str
    to_wide: str | None = None  # integers only
    from_float: str | None = None  # floats only: integers are never rounded from FP32
    one_bits: int = 1  # the bits of 1: what a true condition stores
    # A 16-bit float format's +inf and quiet bit: its values are ordered and chosen on their
    # bits (ON_STORED_BITS)
    ordered_bits: tuple[int, int] | None = None


def _float_form(name: str, infinity_bits: int, quiet_bit: int, one_bits: int) -> StoredForm:
    return StoredForm(f"{name}_to_float({{0}})", f"float_is_positive({{0}}, {infinity_bits:#x}u)",
                      f"float_is_nan({{0}}, 0x7fffu, {infinity_bits:#x}u)",
                      from_float=f"{name}_from_float({{0}})", one_bits=one_bits,
                      ordered_bits=(infinity_bits, quiet_bit))


def _integer_form(data_type: T) -> StoredForm:
    bits = data_type_info(data_type).bits
    if data_type.name.startswith("U"):
        return StoredForm("float({0})", "{0} != 0u", "false", "uvec2({0}, 0u)")
    return StoredForm(f"signed_to_float({{0}}, {bits}u)", f"signed_is_positive({{0}}, {bits}u)", "false",
                      f"signed_to_wide({{0}}, {bits}u)")


STORED_FORMS: dict[T, StoredForm] = {
    T.FLOAT32: StoredForm("uintBitsToFloat({0})", "float_is_positive({0}, 0x7f800000u)",
                          "float_is_nan({0}, 0x7fffffffu, 0x7f800000u)", from_float="floatBitsToUint({0})",
                          one_bits=0x3F800000),
    T.FLOAT16: _float_form("float16", 0x7C00, 0x0200, 0x3C00),
    T.BFLOAT16: _float_form("bfloat16", 0x7F80, 0x0040, 0x3F80),
    **{t: _integer_form(t) for t in (T.INT32, T.INT16, T.INT8, T.UINT32, T.UINT16, T.UINT8)},
}

# Comparisons, maxima and minima of two values decoded from one 16-bit float format, made on
# their stored bits instead (shaders/numeric.glsl's stored16_*): the same truths and choices
# as on the FP32 values, without the two conversions (a third, back, where a chosen value is
# stored in its own format). {infinity} and {quiet} are the format's.
ON_STORED_BITS: dict[str, str] = {
    "lt": "bool {out} = stored16_less({0}, {1}, {infinity});",
    "le": "bool {out} = stored16_less_equal({0}, {1}, {infinity});",
    "gt": "bool {out} = stored16_less({1}, {0}, {infinity});",
    "ge": "bool {out} = stored16_less_equal({1}, {0}, {infinity});",
    "eq": "bool {out} = stored16_equal({0}, {1}, {infinity});",
    "max": "uint {out} = stored16_max({0}, {1}, {infinity}, {quiet});",
    "min": "uint {out} = stored16_min({0}, {1}, {infinity}, {quiet});",
}

# The primitives on stored bits, and which form of their operand's data type each uses.
_DECODED = {"float": "to_float", "positive": "positive", "isnan_stored": "nan", "to_wide": "to_wide"}


def _form(data_type: T | None, use: str) -> str:
    pattern = getattr(STORED_FORMS[data_type], use) if data_type in STORED_FORMS else None
    if pattern is None:
        raise TypeError(f"{data_type.name if data_type else 'this value'} has no {use.replace('_', ' ')} form")
    return pattern


_BITS_WIDE = ("bits_not", "bits_shift_left", "bits_shift_right")  # the operations that read the element width

_GLSL_TYPE = {STORED: "uint", FLOAT: "float", BOOL: "bool", INTEGER: "uvec2"}


def render(result: Expr, inputs: tuple[T, ...], output: T) -> list[str]:
    """GLSL statements computing `result` over inputs of the `inputs` data types; the last one
    assigns its bits stored as `output` (a condition as 0 or 1) to `result`."""
    return render_assignments([("uint result", result, STORED)], inputs, output)


def render_wide(result: Expr, inputs: tuple[T, ...], wide_type: T) -> list[str]:
    """GLSL statements computing `result` in the 64-bit kernel (WIDE_RENDER) over inputs of
    the `inputs` data types, the values of one 64-bit `wide_type`, the last one assigning it
    to `result`: as it is, or a condition as the integer 1 or 0. A primitive without a 64-bit
    form raises UnsupportedError."""
    if result.kind == BOOL:
        result = where(result, integer_constant(1), INTEGER_ZERO)
    return render_assignments([("result", result, result.kind)], inputs, wide_type, table=WIDE_RENDER)


def render_assignments(assignments: list[tuple[str, Expr, str]], inputs: tuple[T, ...], stored_type: T,
                       totals: dict[int, int] | None = None, table: dict[str, str] = RENDER,
                       kept: dict[int, str] | None = None) -> list[str]:
    """GLSL statements computing each (target, expression, kind) in one SSA namespace and
    assigning it to its target as that kind. Input k's bits are decoded as `inputs[k]`;
    numbers are rounded, and stored targets written, as `stored_type`. `totals` maps the
    reduce nodes whose totals are known to their slot in `totals[]`; a reduce node not
    among them is an error. `table` is RENDER, or WIDE_RENDER for the 64-bit kernel. `kept`
    maps FP32 nodes already computed, by an earlier pass over the same element, to the GLSL
    that reads their value."""
    totals = totals or {}
    kept = kept or {}
    glsl_types = {**_GLSL_TYPE, STORED: "uvec2"} if table is WIDE_RENDER else _GLSL_TYPE
    names: dict[int, str] = {}
    types: dict[int, T | None] = {}  # each stored value's data type (None: +0, any type's)
    # FP32 values that are exactly a stored value of a 16-bit format (a maximum's choice): its
    # bits and format, which storing the value in that format takes as they are
    stored_twins: dict[int, tuple[str, T]] = {}
    lines: list[str] = []
    serials = itertools.count()

    def fresh() -> str:
        return f"v{next(serials)}"

    def stored_type_of(node: Expr) -> T | None:
        if node.op == "input":
            return inputs[node.value]
        if node.op.startswith("bits_"):  # the bits of its first operand's type
            return types[node.args[0].serial]
        if node.op in ("round", "narrow", "one_bits"):  # a fused node's own type, else the output's
            return node.value or stored_type
        if node.op == "zero":  # +0's bits are +0 in the output's type too
            return stored_type
        if node.op == "select":
            chosen = {types[arg.serial] for arg in node.args[1:] if arg.op != "zero"} - {None}
            if len(chosen) > 1:
                raise TypeError("a select between stored bits of different data types: make them numbers first")
            return chosen.pop() if chosen else None
        return None

    def on_stored_bits(node: Expr) -> bool:
        """Compute `node` on its operands' stored bits where both decode one 16-bit float format
        (ON_STORED_BITS): a condition under `names`, a choice's bits under `stored_twins`."""
        if table is not RENDER or node.op not in ON_STORED_BITS or any(arg.op != "float" for arg in node.args):
            return False
        stored = [visit(arg.args[0]) for arg in node.args]
        formats = {types[arg.args[0].serial] for arg in node.args}
        data_type = formats.pop() if len(formats) == 1 else None
        if data_type not in STORED_FORMS or STORED_FORMS[data_type].ordered_bits is None:
            return False
        infinity, quiet = STORED_FORMS[data_type].ordered_bits
        name = fresh()
        lines.append(ON_STORED_BITS[node.op].format(*stored, out=name, infinity=f"{infinity:#x}u",
                                                    quiet=f"{quiet:#x}u"))
        if node.kind == FLOAT:
            stored_twins[node.serial] = (name, data_type)
        else:
            names[node.serial] = name
        return True

    def stored_choice(node: Expr, data_type: T) -> str | None:
        """The bits of `node` stored as `data_type`, where it is a choice made on bits of that
        format; else None."""
        if node.serial not in names and node.serial not in stored_twins:
            on_stored_bits(node)
        bits, chosen_type = stored_twins.get(node.serial, (None, None))
        return bits if chosen_type == data_type else None

    def visit(node: Expr) -> str:
        if node.serial in names:
            return names[node.serial]
        if node.serial in kept:
            names[node.serial] = fresh()
            lines.append(f"float {names[node.serial]} = {kept[node.serial]};")
            return names[node.serial]
        if node.serial in stored_twins or on_stored_bits(node):
            if node.serial in stored_twins:  # a choice's FP32 value, decoded where something reads it
                bits, data_type = stored_twins[node.serial]
                names[node.serial] = fresh()
                lines.append(f"float {names[node.serial]} = {_form(data_type, 'to_float').format(bits)};")
            return names[node.serial]
        if node.op == "round" and (bits := stored_choice(node.args[0], node.value or stored_type)) is not None:
            names[node.serial] = fresh()
            types[node.serial] = node.value or stored_type
            lines.append(f"uint {names[node.serial]} = {bits};")
            return names[node.serial]
        if node.op in REDUCTIONS:
            if node.serial not in totals:
                raise ValueError(f"{node.op} is used before its stage has run")
            operands = []
        else:
            operands = [visit(arg) for arg in node.args]
        name = fresh()
        pattern = table.get(node.op)
        if pattern is None:
            raise UnsupportedError(f"{node.op} has no 64-bit form: the 64-bit kernel computes integers and bits",
                                   "data_type")
        value_bits = int(np.float32(node.value).view(np.uint32)) if node.op == "const" else None
        # +0 of any type (None) decodes as the output's +0.
        decoded = _form(types[node.args[0].serial] or stored_type, _DECODED[node.op]).format(*operands) \
            if "{decoded}" in pattern else None
        encoded = _form(node.value or stored_type, "from_float").format(*operands) if node.op == "round" else None
        # The element width of a bits_* operand, or of what `narrow` stores: what it keeps.
        width = data_type_info(types[node.args[0].serial] or stored_type).bits if node.op in _BITS_WIDE else \
            data_type_info(node.value or stored_type).bits if node.op == "narrow" else None
        lines.append(pattern.format(*operands, out=name, value=node.value, value_bits=value_bits,
                                    type=glsl_types[node.kind], slot=totals.get(node.serial),
                                    decoded=decoded, encoded=encoded, width=width,
                                    one=STORED_FORMS[node.value].one_bits if node.op == "one_bits" else None,
                                    mask=None if width is None else f"{(1 << width) - 1:#x}"))
        names[node.serial] = name
        if node.kind == STORED:
            types[node.serial] = stored_type_of(node)
        return name

    for target, result, kind in assignments:
        if kind == STORED and (bits := stored_choice(result, stored_type)) is not None:
            lines.append(f"{target} = {bits};")
        else:
            value = visit(result)
            lines.append(f"{target} = {_assigned(kind, result.kind, value, types.get(result.serial), stored_type)};")
    return lines


def _assigned(kind: str, value_kind: str, value: str, value_type: T | None, stored_type: T) -> str:
    """`value` as a target of `kind` takes it: a number meant for a tensor is rounded to its
    data type once, here; stored bits of another data type pass through FP32 (exact for
    every value of a narrower type); a condition stores as 0 or 1."""
    if kind == value_kind and (kind != STORED or value_type in (None, stored_type)):
        return value
    if kind == STORED and value_kind == STORED:
        value, value_kind = _form(value_type, "to_float").format(value), FLOAT
    if (kind, value_kind) == (STORED, FLOAT):
        return _form(stored_type, "from_float").format(value)
    if (kind, value_kind) == (STORED, BOOL):
        return f"{value} ? {STORED_FORMS[stored_type].one_bits:#x}u : 0u"
    if (kind, value_kind) == (STORED, INTEGER):
        return f"from_wide({value})"
    if (kind, value_kind) == (FLOAT, STORED):
        return _form(value_type, "to_float").format(value)
    raise TypeError(f"a {value_kind} value cannot be assigned as {kind}")


# The primitives whose GLSL runs a loop that is not unrolled, and its most iterations: lavapipe
# ends an invocation's loops after 65,535 iterations in all, which a kernel that maps many
# elements an invocation (the reductions) must stay under.
# (A division in the 64-bit kernel takes a step a bit of the dividend.)
LOOP_ITERATIONS = {"fmod": 277, "wide_pow": 32, "sin": 3, "cos": 3, "tan": 3, "wide_div": 64, "wide_mod_trunc": 64,
                   "wide_mod_floor": 64}


def loop_iterations(*results: Expr) -> int:
    """The most loop iterations computing `results` once may take."""
    total, seen, stack = 0, set(), list(results)
    while stack:
        node = stack.pop()
        if node.serial in seen:
            continue
        seen.add(node.serial)
        total += LOOP_ITERATIONS.get(node.op, 0)
        stack.extend(node.args)
    return total


# The primitives shaders/transcendental.glsl implements, and the files it includes for some of
# them (each behind its own define, so a kernel compiles only the functions it calls).
TRANSCENDENTALS = ("exp", "expm1", "tanh", "sigmoid", "softplus", "sigmoid_slope", "tanh_slope", "log", "gelu",
                   "gelu_slope", "exp_diff", "product_error")
FUNCTION_FILES = {
    **dict.fromkeys(("sin", "cos", "tan"), "USES_TRIGONOMETRIC"),
    **dict.fromkeys(("asin", "acos", "atan", "atan2"), "USES_INVERSE_TRIGONOMETRIC"),
    **dict.fromkeys(("sinh", "cosh", "asinh", "acosh", "atanh", "erf"), "USES_HYPERBOLIC"),
    "pow": "USES_POWER",
}


def transcendental_defines(*results: Expr) -> dict[str, str]:
    """The defines that include what `results` call of dmlpy's own functions (none: {})."""
    defines: dict[str, str] = {}
    seen, stack = set(), list(results)
    while stack:
        node = stack.pop()
        if node.serial in seen:
            continue
        seen.add(node.serial)
        if node.op in TRANSCENDENTALS or node.op in FUNCTION_FILES:
            defines["USES_TRANSCENDENTALS"] = ""
        if node.op in FUNCTION_FILES:
            defines[FUNCTION_FILES[node.op]] = ""
        stack.extend(node.args)
    return defines
