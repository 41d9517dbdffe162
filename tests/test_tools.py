"""The shader dump tool, the docs generator and the demo, run as a user runs them."""

import contextlib
import dataclasses
import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dmlpy as dml
from dmlpy.cli.dump_shaders import main as dump_shaders_main
from dmlpy.cli.progress import Progress
from dmlpy.ops.activations import TABLE
from dmlpy.ops.elementwise import TABLE as ELEMENT_WISE_TABLE
from dmlpy.ops.fields import EnumField, ScalarUnionField, UIntField
from dmlpy.ops.reductions import REDUCTIONS
from dmlpy.runtime.shader_compiler import find_tool
from dmlpy.runtime.shader_compiler import run_tool as run_shader_tool

ROOT = Path(__file__).resolve().parent.parent


def _required(schema, name: str) -> bool:
    return next(f for f in dataclasses.fields(schema.desc_class) if f.name == name).default is dataclasses.MISSING


def run_tool(*args):
    return subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True, cwd=ROOT, timeout=300)


def dump_in_this_process(*args) -> subprocess.CompletedProcess:
    """`dmlpy-dump-shaders ARGS` through its entry point (dmlpy.cli.dump_shaders:main) in this
    process: the sweep over every operator would otherwise start Python a thousand times. The
    tests above and below run the tool itself as a user does."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = dump_shaders_main([str(a) for a in args])
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


LAYOUTS = [["--sizes", "2,3,4"], ["--sizes", "2,3,4", "--strides", "12,4,1"],
           ["--sizes", "3,5", "--input-tensor-strides", "1,3"],
           ["--sizes", "7", "--OUTPUT-strides", "2"]]  # the operator's output, whatever its name


# The row-wise operators without axes (SOFTMAX, ...): the last axis of at most 2 effective dims.
LAST_AXIS_ONLY = {name for row in TABLE if row.axes_form for name in (row.name, f"{row.name}_grad")}


def supported_dtypes(name):
    return sorted({t.name.lower() for row in dml.OPERATORS[name].support for t in row.data_types})


# Every other family's operators in every layout and data type; the element-wise family (one
# kernel family, whose layouts the activations cover) each operator once per kind of math it
# computes: a float type, and an integer type where it has an integer or bits form.
def _element_wise_dumps():
    for row in ELEMENT_WISE_TABLE:
        kinds = [("float16", "float32")] if row.floats or row.bits else []
        kinds += [("int8", "uint8", "int32", "uint32")] if row.integers or row.bits else []
        for preferred in kinds:
            dtype = next((t for t in preferred if t in supported_dtypes(row.name)), None)
            if dtype is not None:
                yield row.name, dtype, LAYOUTS[0]


# The reductions family: REDUCE once per function and kind of math (a float type, an integer
# type where it takes one); the others in every layout in FLOAT32 and once in each other type.
def _reduction_dumps():
    for function, row in REDUCTIONS.items():
        for preferred in (("float16", "float32"), ("int8", "int32"), ("int64",)):
            dtype = next((t for t in preferred if dml.TensorDataType[t.upper()] in row.data_types()), None)
            if dtype is not None:
                yield "reduce", dtype, [*LAYOUTS[0], "--function", function.name]
    for name in sorted(REDUCTION_NAMES - {"reduce"}):
        yield from ((name, "float32", layout) for layout in LAYOUTS)
        yield from ((name, dtype, LAYOUTS[0]) for dtype in supported_dtypes(name)
                    if dtype != "float32")


# The matrix products: their tensors differ in shape, so each layout names A's and B's sizes
# (the output's follow; an optional tensor is left out unless its sizes are given).
PRODUCT_LAYOUTS = {
    "gemm": [["--sizes", "2,3,4", "--b-tensor-sizes", "2,4,5"],
             ["--sizes", "4,3", "--b-tensor-sizes", "5,4", "--trans-a", "TRANSPOSE", "--trans-b",
              "TRANSPOSE", "--c-tensor-sizes", "3,5", "--c-tensor-strides", "0,1"],
             ["--sizes", "8,4", "--b-tensor-sizes", "4,8", "--fused-activation", "relu"]],
    "matrix_multiply_integer": [["--sizes", "3,4", "--b-tensor-sizes", "4,5"],
                                ["--sizes", "3,4", "--b-tensor-sizes", "4,5", "--a-zero-point-tensor-sizes",
                                 "3,1", "--b-zero-point-tensor-sizes", "1,1"]],
    "random_generator": [["--sizes", "1,1,1,6", "--output-tensor-sizes", "2,3,5,7", "--output-state-tensor-sizes",
                          "1,1,1,6"],
                         ["--sizes", "6", "--output-tensor-sizes", "3,5", "--output-tensor-strides", "1,3"]],
    "fill_value_constant": [["--sizes", "2,3,4"], ["--sizes", "3,5", "--output-tensor-strides", "1,3"]],
    "fill_value_sequence": [["--sizes", "2,3,4"], ["--sizes", "3,5", "--output-tensor-strides", "1,3"]],
    "one_hot": [["--sizes", "1,3,4", "--output-tensor-sizes", "5,3,4", "--values-tensor-sizes", "1,1,2"],
                ["--sizes", "1,6", "--output-tensor-sizes", "4,6", "--output-tensor-strides", "1,4",
                 "--values-tensor-sizes", "2,1", "--indices-tensor-dtype", "INT64"]],
    "adam_optimizer": [["--sizes", "1,2,3,4", "--training-step-tensor-sizes", "1,1,1,1"],
                       ["--sizes", "1,1,3,5", "--input-parameters-tensor-strides", "0,0,1,3",
                        "--training-step-tensor-sizes", "1,1,1,1"]],
}


def _product_dumps():
    for name, layouts in PRODUCT_LAYOUTS.items():
        yield from ((name, dtype, layout) for dtype in supported_dtypes(name) for layout in layouts)


ELEMENT_WISE_NAMES = {row.name for row in ELEMENT_WISE_TABLE}
REDUCTION_NAMES = {name for name, schema in dml.OPERATORS.items() if schema.family.name == "reductions"}
OWN_LAYOUTS = ELEMENT_WISE_NAMES | REDUCTION_NAMES | set(PRODUCT_LAYOUTS)
DUMPS = [(n, d, layout) for n in sorted(set(dml.OPERATORS) - OWN_LAYOUTS) for d in supported_dtypes(n)
         for layout in LAYOUTS] + list(_element_wise_dumps()) + list(_reduction_dumps()) + list(_product_dumps())
# The dumped GLSL compiling by hand to the same SPIR-V depends on the kernel family and the
# headers a dump inlines, not on the layout or data type: checked on each operator's first dump.
# (Built from the end, so that each operator's first dump is the one written last.)
FIRST_DUMPS = {name: (dtype, layout) for name, dtype, layout in reversed(DUMPS)}


@pytest.mark.parametrize("name, dtype, layout", DUMPS, ids=lambda a: " ".join(a) if isinstance(a, list) else a)
def test_dumped_spirv_passes_spirv_val(tmp_path, name, dtype, layout):
    schema = dml.OPERATORS[name]
    scalars = [arg for s in schema.scalars for arg in (f"--{s.name}", "0.25")]
    scalars += [arg for v in schema.values if isinstance(v, ScalarUnionField)
                for arg in (f"--{v.name.replace('_', '-')}", "1")]
    scalars += [arg for v in schema.values if isinstance(v, UIntField) for arg in (f"--{v.name}", str(v.minimum))]
    scalars += [arg for v in schema.values if isinstance(v, EnumField) and f"--{v.name}" not in layout
                and _required(schema, v.name)
                for arg in (f"--{v.name}", next(iter(v.enum_type.__members__)))]
    axes = ["--axes", "0"] if schema.axes else []
    if name in LAST_AXIS_ONLY:  # effective rank 2 at most
        layout = [arg.replace("2,3,4", "1,3,4") for arg in layout]
    output = "--" + schema.outputs[0].name.replace("_", "-")
    layout = [arg.replace("--OUTPUT", output) for arg in layout]
    result = dump_in_this_process(name, "--dtype", dtype, *layout, *scalars, *axes, "--out", tmp_path)
    assert result.returncode == 0, result.stderr
    check_dumped_files(tmp_path, name, result, compile_by_hand=FIRST_DUMPS[name] == (dtype, layout))


def test_dumped_prelu_with_a_broadcast_slope(tmp_path):
    result = run_tool("tools/dump_shaders.py", "prelu_grad", "--dtype", "bfloat16", "--sizes", "2,3,4",
                      "--slope-tensor-strides", "0,1,0", "--output-slope-gradient-tensor-sizes", "1,3,1",
                      "--out", tmp_path)
    assert result.returncode == 0, result.stderr
    assert "path reduction, 1 stage(s)" in result.stdout  # rows of 8 terms: one chunk, the total written at once
    check_dumped_files(tmp_path, "prelu_grad", result)


def check_dumped_files(tmp_path, name, result, compile_by_hand=True):
    paths = [Path(line) for line in result.stdout.splitlines() if not line.startswith("//")]
    assert paths and len(paths) % 3 == 0 and all(p.exists() and p.name.startswith(name) for p in paths)
    for comp, spv, spvasm in zip(paths[::3], paths[1::3], paths[2::3]):
        assert (comp.suffix, spv.suffix, spvasm.suffix) == (".comp", ".spv", ".spvasm")
        validation = run_shader_tool(find_tool("spirv-val"), [str(spv)], capture_output=True, text=True)
        assert validation.returncode == 0, validation.stdout + validation.stderr
        assert "OpEntryPoint GLCompute" in spvasm.read_text()
        if not compile_by_hand:
            continue
        # The dumped GLSL is self-contained: it compiles by hand to the same SPIR-V.
        again = tmp_path / "again.spv"
        run_shader_tool(find_tool("glslangValidator"), ["-V", "--target-env", "vulkan1.1", "-o", str(again), str(comp)],
                        check=True, capture_output=True)
        assert again.read_bytes() == spv.read_bytes()


def test_dump_reports_the_path_taken(tmp_path):
    packed = run_tool("tools/dump_shaders.py", "relu_grad", "--dtype", "float16", "--sizes", "4", "--out", tmp_path)
    strided = run_tool("tools/dump_shaders.py", "relu_grad", "--dtype", "float16", "--sizes", "2,2",
                       "--output-gradient-tensor-strides", "1,2", "--out", tmp_path)
    assert "path packed" in packed.stdout
    assert "_packed_main.comp" in packed.stdout and "_packed_tail.comp" in packed.stdout
    assert "chosen because: every tensor has one dense layout" in packed.stdout
    assert "stage tail (tail elements, beside the one before)" in packed.stdout
    assert "path strided" in strided.stdout and "walks 64 elements along the output's contiguous dim" in strided.stdout
    assert "#define COLUMN_RUN" in (tmp_path / "relu_grad_float16_strided.comp").read_text()


def test_a_cpu_device_moves_vectors_in_64_bit_words_and_a_gpu_in_one_access(tmp_path):
    # lavapipe loads and stores a vector component by component: half the components is
    # nearly half the time. A GPU profile plans the plain 16-byte vectors.
    cpu = run_tool("tools/dump_shaders.py", "relu_grad", "--dtype", "float32", "--sizes", "64", "--out", tmp_path)
    assert cpu.returncode == 0, cpu.stderr
    assert "each vector moved as two 64-bit words" in cpu.stdout
    assert "#define VECTOR_WORDS_64" in (tmp_path / "relu_grad_float32_packed_main.comp").read_text()
    gpu = run_tool("tools/dump_shaders.py", "relu_grad", "--dtype", "float32", "--sizes", "64",
                   "--profile", "nvidia-h100", "--out", tmp_path)
    assert gpu.returncode == 0, gpu.stderr
    assert "64-bit words" not in gpu.stdout
    assert "#define VECTOR_WORDS_64" not in (tmp_path / "relu_grad_float32_packed_main.comp").read_text()


@pytest.mark.parametrize("args, message", [
    (["--dtype", "uint8", "--sizes", "2,3"], "input_tensor.data_type UINT8 is not supported"),
    (["--dtype", "float32", "--sizes", "2,0"], "BufferTensorDesc.sizes[1] is 0"),
    (["--dtype", "float32", "--sizes", "2,3", "--output-gradient-tensor-strides", "0,1"], "write any element twice"),
    (["--dtype", "float32", "--sizes", "2,3", "--alpha", "1"], "linear_grad needs --beta"),
    (["--dtype", "float32", "--sizes", "2,3", "--alpha", "1", "--beta", "inf"], "beta inf is not a finite FP32"),
])
def test_invalid_desc_exits_non_zero_with_the_message(tmp_path, args, message):
    operator = "linear_grad" if "--alpha" in args else "relu_grad"
    result = run_tool("tools/dump_shaders.py", operator, *args, "--out", tmp_path)
    assert result.returncode == 1 and message in result.stderr and "Traceback" not in result.stderr


def test_dump_help_keeps_each_example_on_its_lines():
    result = run_tool("tools/dump_shaders.py", "--help")
    assert result.returncode == 0, result.stderr
    assert "--sizes 2,3,4 \\\n        --slope-tensor-strides 0,1,0 --output-slope-gradient-tensor-sizes 1,3,1" \
        in result.stdout
    assert "--sizes 4096 \\\n        --then elu" in result.stdout


def test_dump_out_creates_only_its_last_directory(tmp_path):
    missing = tmp_path / "mistyped" / "dir"
    refused = run_tool("tools/dump_shaders.py", "relu_grad", "--dtype", "float32", "--sizes", "4", "--out", missing)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stderr
    assert f"its parent '{tmp_path / 'mistyped'}' does not exist" in refused.stderr.splitlines()[-1]
    assert not (tmp_path / "mistyped").exists()
    created = run_tool("tools/dump_shaders.py", "relu_grad", "--dtype", "float32", "--sizes", "4", "--out",
                       tmp_path / "dir")
    assert created.returncode == 0, created.stderr
    assert sorted(p.suffix for p in (tmp_path / "dir").iterdir()) == [".comp", ".comp", ".spv", ".spv", ".spvasm",
                                                                      ".spvasm"]


def test_help_documents_every_option():
    result = run_tool("tools/dump_shaders.py", "--help")
    assert result.returncode == 0
    for option in ("--dtype", "--sizes", "--strides", "--input-tensor-strides", "--output-gradient-tensor-strides",
                   "--slope-tensor-strides", "--output-slope-gradient-tensor-sizes", "--alpha", "--beta",
                   "--adapter", "--out", *dml.OPERATORS, *(s.dml_name for s in dml.OPERATORS.values())):
        assert option in result.stdout


def test_operator_docs_are_generated_from_the_declarations():
    result = run_tool("tools/gen_docs.py", "--check")
    assert result.returncode == 0, result.stderr


def test_demo_runs_and_is_exact():
    result = run_tool("tools/demo.py")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "bit-exact against NumPy np.where(x > 0, dy, 0): True" in result.stdout


def test_bench_quick_runs_and_reports_every_figure(tmp_path):
    """A smoke test: the benchmark runs and reports; it asserts no speed."""
    report_path = tmp_path / "bench.json"
    result = run_tool("tools/bench.py", "--quick", "--sizes", "256", "--rounds", "1", "--json", report_path)
    assert result.returncode == 0, result.stderr
    report = json.loads(report_path.read_text())
    assert report["rows"] and all(row["gbps"] > 0 and 0 < row["copy_ratio_low"] <= row["copy_ratio"]
                                  <= row["copy_ratio_high"] and row["copy_gbps"] > 0 for row in report["rows"])
    assert all(row["streams_ratio"] > 0 and row["read_gbps"] > 0 and row["write_gbps"] > 0 for row in report["rows"])
    assert "/streams" in result.stdout and "read/write GB/s" in result.stdout
    assert {row["path"] for row in report["host_overhead"]} >= {"bare kp sequence eval", "execute(binding table)"}
    assert "/copy" in result.stdout and "host cost" in result.stdout
    assert report["chains"] and all(row["same_bits"] and row["fused_ms"] > 0 for row in report["chains"])
    assert "a chain fused into one kernel" in result.stdout
    assert {row["expression"] for row in report["expressions"]} >= {
        "where(a < 0, (a * b + c).astype(f16), c.astype(f16))", "leaky(a * b + c) + d * 0.5 - 0.25"}
    assert all(row["same_bits"] and row["device_arrays_ms"] > 0 and row["numpy_ms"] > 0
               for row in report["expressions"])
    assert "expression on four arrays" in result.stdout


def test_bench_against_measures_another_revision_beside_this_checkout_in_one_run():
    """A smoke test: HEAD, checked out into a worktree of its own, against this checkout,
    interleaved; it asserts no speed."""
    result = run_tool("tools/bench_against.py", "HEAD", "--cases", "relu_grad float32 packed", "--sizes", "256",
                      "--rounds", "2")
    assert result.returncode == 0, result.stderr
    header, columns, row = result.stdout.splitlines()[:3]
    assert header.startswith("# before: HEAD (") and "2 interleaved rounds" in header
    assert columns.split()[:4] == ["case", "elements", "before", "ms"]
    fields = row.split()
    assert fields[:4] == ["relu_grad", "float32", "packed", "256"] and all(float(f) > 0 for f in fields[4:7])
    assert result.stderr.splitlines() == ["bench_against: 1/1 relu_grad float32 packed at 256 elements"]
    worktrees = subprocess.run(["git", "worktree", "list"], cwd=ROOT, capture_output=True, text=True).stdout
    assert "dmlpy-before-" not in worktrees  # removed afterwards


def test_bench_shows_its_progress_on_stderr_a_line_a_step_off_a_terminal():
    result = run_tool("tools/bench.py", "--sizes", "256,512", "--rounds", "1", "--no-chains", "--cases",
                      "relu_grad float32 packed")
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == ["bench: 1/3 relu_grad float32 packed at 256 elements",
                                          "bench: 2/3 relu_grad float32 packed at 512 elements",
                                          "bench: 3/3 host cost of one dispatch"]
    assert "bench:" not in result.stdout and "relu_grad float32 packed" in result.stdout


def multiply_add_reference(plan) -> np.ndarray:
    """shaders/multiply_add.comp's words for a plan, in NumPy FP32 (each product and sum
    rounded on its own): chain k of invocation i starts at ((i + k) & 63) * 0.5 + 1."""
    from dmlpy.kernels.yardstick import ADDEND, MULTIPLIER

    defines = {name: int(str(value).rstrip("u")) for name, value in plan.stages[0].defines.items()}
    chains = np.arange(64)[:, None] + np.arange(defines["ACCUMULATORS"])[None, :]
    acc = (chains & 63).astype(np.float32) * np.float32(0.5) + np.float32(1)
    for _ in range(defines["ITERATIONS"] * defines["UNROLL"]):
        acc = acc * np.float32(MULTIPLIER) + np.float32(ADDEND)
    total = acc[:, 0]
    for k in range(1, acc.shape[1]):
        total = total + acc[:, k]
    return np.resize(total, defines["INVOCATION_COUNT"])  # invocation i's words are invocation i % 64's


def test_the_arithmetic_yardstick_performs_every_pair_it_plans(device):
    """The yardstick's words equal a NumPy walk of every pair (so no pair was dropped: not by a
    compiler, not by lavapipe's loop limit; a 1024^3 GEMM's pairs, thousands of loop trips an
    invocation on lavapipe), for each shape the benchmark tries; and its plans do at least the
    pairs asked, within the loop limit, for any count."""
    from dmlpy.kernels.yardstick import MAX_ITERATIONS, SHAPES, plan_multiply_add
    from dmlpy.runtime.kompute import Launch
    from dmlpy.runtime.shader_compiler import compile_glsl

    for accumulators, unroll in SHAPES:
        for pairs in (1, 1 << 21, 1 << 30, 1 << 40):
            plan = plan_multiply_add(pairs, device.adapter, accumulators=accumulators, unroll=unroll)
            (stage,) = plan.stages
            assert pairs <= plan.element_count == stage.invocations * stage.elements_per_item
            assert int(stage.defines["ITERATIONS"].rstrip("u")) <= MAX_ITERATIONS < 65535
        plan = plan_multiply_add(1 << 30, device.adapter, accumulators=accumulators, unroll=unroll)
        (stage,) = plan.stages
        result = device.create_buffer(4 * stage.invocations)
        device.context.run(device.context.create_dispatch(compile_glsl(stage.source()).spirv, [Launch(
            [result.segments[0]], stage.workgroups(device.adapter, plan.element_count),
            np.array(plan.scalar_bits, np.uint32))]))
        words = result.read(np.uint32, stage.invocations)
        assert np.array_equal(words, multiply_add_reference(plan).view(np.uint32)), (accumulators, unroll)
        result.destroy()


def test_the_copy_yardstick_moves_its_words_one_way_or_both(device):
    """The copy shader, in every shape the benchmark tries: the copy writes the source's words;
    the read-only form reads them and writes nothing (the destination keeps its words); the
    write-only form writes vector v as v in each of its components and reads nothing. 100
    words: 25 vectors, so the last invocation's vectors run past the end."""
    from dmlpy.kernels.codegen import COPY_DIRECTIONS, plan_copy
    from dmlpy.runtime.kompute import Launch
    from dmlpy.runtime.shader_compiler import compile_glsl

    sys.path.insert(0, str(ROOT / "tools"))
    from bench import COPY_SHAPES

    words = 100
    source_words = np.arange(1, words + 1, dtype=np.uint32) * np.uint32(2654435761)
    untouched = np.full(words + 4, 0xDEADBEEF, np.uint32)
    vectors = np.arange(words // 4)
    expected = {"copy": np.concatenate([source_words, untouched[words:]]), "read": untouched,
                "write": {False: np.concatenate([np.repeat(vectors, 4).astype(np.uint32), untouched[words:]]),
                          True: np.concatenate([np.stack([vectors, 0 * vectors, vectors, 0 * vectors], 1).ravel()
                                                .astype(np.uint32), untouched[words:]])}}
    for workgroup_size, vectors_each, interleaved, words_64 in COPY_SHAPES:
        if words_64 and not device.adapter.shader_int64:
            continue
        for direction in COPY_DIRECTIONS:
            (stage,) = plan_copy(words, device.adapter, workgroup_size, vectors_each, interleaved, words_64,
                                 direction).stages
            source, destination = device.create_buffer(4 * words), device.create_buffer(4 * words + 16)
            source.write(source_words)
            destination.write(untouched)
            device.context.run(device.context.create_dispatch(compile_glsl(stage.source()).spirv, [Launch(
                [source.segments[0], destination.segments[0]], stage.workgroups(device.adapter, words),
                np.array([words], np.uint32))]))
            want = expected[direction][words_64] if direction == "write" else expected[direction]
            assert np.array_equal(destination.read(np.uint32, words + 4), want), \
                (workgroup_size, vectors_each, interleaved, words_64, direction)
            source.destroy()
            destination.destroy()
    with pytest.raises(ValueError, match="direction 'sideways' is not one of"):
        plan_copy(words, device.adapter, direction="sideways")


def test_bench_gemm_only_reports_gemm_against_the_arithmetic_yardstick(tmp_path):
    """A smoke test of --gemm-only (--quick: the training shapes): it asserts no speed."""
    report_path = tmp_path / "gemm.json"
    result = run_tool("tools/bench.py", "--gemm-only", "--quick", "--rounds", "1", "--json", report_path)
    assert result.returncode == 0, result.stderr
    report = json.loads(report_path.read_text())
    assert len(result.stderr.splitlines()) == 3 and "/copy" not in result.stdout
    if not hasattr(dml, "GemmOperatorDesc"):
        assert not report["gemm"] and len(report["skipped"]) == 3
        return
    assert [row["case"] for row in report["gemm"]] == [
        "gemm float32 256x128x64 forward Y=X.W", "gemm float32 256x64x128 dX=dY.W^T (trans_b)",
        "gemm float32 64x128x256 dW=X^T.dY (trans_a)"]
    for row in report["gemm"]:
        assert row["pairs"] == row["m"] * row["n"] * row["k"] == 256 * 64 * 128
        assert row["gpairs"] > 0 and row["arith_gpairs"] > 0 and row["numpy_ms"] > 0
        assert 0 < row["arith_ratio_low"] <= row["arith_ratio"] <= row["arith_ratio_high"]
        assert row["relative_error"] < 1e-4
    assert "/arith" in result.stdout and "arith Gpair/s" in result.stdout


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_is_a_bar_redrawn_in_place_on_a_terminal():
    terminal = Terminal()
    progress = Progress("bench", 4, terminal)
    progress.step("relu_grad float32 packed at 256 elements")
    progress.step("host cost of one dispatch")
    progress.done()
    text = terminal.getvalue()
    assert "\n" not in text and text.count("\r\x1b[K") == 3 and text.endswith("\r\x1b[K")
    assert "bench [....................] 1/4 relu_grad float32 packed at 256 elements" in text
    assert "bench [#####...............] 2/4 host cost of one dispatch" in text


def test_gpu_check_says_which_test_tools_its_python_lacks_before_running_anything(tmp_path):
    """A Python without pytest (a bare venv): named with the command that installs what is
    missing, exit status 3, and no suite, benchmark or report."""
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True, timeout=120)
    python = bare / "bin" / "python"
    for pytest_args, missing in (("", "pytest hypothesis"), ("-n 2 -x", "pytest hypothesis pytest-xdist")):
        result = run_tool("tools/gpu_check.py", "--python", python, "--pytest-args", pytest_args, "--out-dir",
                          tmp_path / "devices", "--log", tmp_path / "suite.log")
        assert result.returncode == 3, result.stdout + result.stderr
        assert result.stderr.splitlines() == [
            f"gpu-check: {python} cannot import {missing.replace(' ', ', ')}, which the suite needs: install with "
            f"`{python} -m pip install {missing}`"]
    assert not (tmp_path / "devices").exists() and not (tmp_path / "suite.log").exists()


def test_dump_shows_the_fused_kernels_of_a_chain(tmp_path):
    result = run_tool("tools/dump_shaders.py", "linear", "--alpha", "2", "--beta", "1", "--dtype", "float16",
                      "--sizes", "8,64", "--then", "elu:alpha=0.5", "--then", "scaled_tanh", "--then", "softmax",
                      "--then", "relu_grad", "--out", tmp_path)
    assert result.returncode == 0, result.stderr
    assert "a graph of 5 nodes (linear -> elu -> scaled_tanh -> softmax -> relu_grad)" in result.stdout
    # the element-wise chain is the reduction's prologue: one kernel (its passes), then relu_grad
    assert "kernel 0: nodes 0 (linear), 1 (elu), 2 (scaled_tanh), 3 (softmax), path reduction" in result.stdout
    assert "kernel 1: nodes 4 (relu_grad)" in result.stdout
    # its first stage (the maximum), or on a CPU device its only one (every pass of a row)
    fused = sorted(tmp_path.glob("graph_float16_kernel0_reduction*.comp"))[0].read_text()
    assert "#define SCALAR_COUNT 5" in fused  # linear's two, elu's one, scaled_tanh's two, in one kernel
    refused = run_tool("tools/dump_shaders.py", "relu_grad", "--dtype", "float32", "--sizes", "4", "--then",
                       "tanh:bogus=1")
    assert refused.returncode == 1 and "unexpected keyword argument 'bogus'" in refused.stderr


TOOLS = sorted(path.relative_to(ROOT).as_posix() for path in (ROOT / "tools").glob("*.py"))


@pytest.mark.parametrize("tool", TOOLS)
def test_every_tool_has_help_with_an_example(tool):
    result = run_tool(tool, "--help")
    assert result.returncode == 0, result.stderr
    assert f"python {tool}" in result.stdout  # an example command line
    assert "Exit status" in result.stdout


USAGE_ERRORS = [
    ("tools/dump_shaders.py", ["relu_grad", "--dtype", "float32", "--sizes", "4", "--alpha", "1"],
     "relu_grad (ACTIVATION_RELU_GRAD) has no --alpha"),
    ("tools/dump_shaders.py", ["leaky_relu_grad", "--dtype", "float32", "--sizes", "4", "--use-dst", "--axes", "0"],
     "has no --axes, --use-dst"),
    ("tools/dump_shaders.py", ["elu", "--dtype", "float32", "--sizes", "4", "--slope-tensor-strides", "0"],
     "elu (ACTIVATION_ELU) has no --slope-tensor-strides"),
    ("tools/dump_shaders.py", ["relu_grad", "--dtype", "float32", "--sizes", "4", "--adapter", "7"],
     "adapter '7' is not an adapter index; the adapters are 0: "),
    ("tools/dump_shaders.py", ["relu_grad", "--dtype", "float32", "--sizes", "4", "--profile", "nvidia"],
     "profile 'nvidia' is not a device profile; the profiles are amd-rdna3"),
    ("tools/dump_shaders.py", ["relu_grad", "--dtype", "float32", "--sizes", "4,x"], "is not a comma-separated list"),
    ("tools/dump_shaders.py", ["no_such_operator", "--dtype", "float32", "--sizes", "4"], "invalid choice"),
    ("tools/dump_shaders.py", ["relu_grad", "--dtype", "float32", "--sizes", "4", "--then", "nope"],
     "'nope' is not an operator name"),
    ("tools/dump_shaders.py", ["relu_grad", "--dtype", "float32", "--sizes", "4", "--then", "elu:alpha"],
     "'alpha' is not FIELD=VALUE"),
    ("tools/bench.py", ["--sizes", "256,x"], "argument --sizes: 'x' is not a positive integer"),
    ("tools/bench.py", ["--sizes", "0"], "argument --sizes: '0' is not a positive integer"),
    ("tools/bench.py", ["--rounds", "-1"], "argument --rounds"),
    ("tools/bench.py", ["--cases", "relu_grad float64 packed"], "unknown case 'relu_grad float64 packed'"),
    ("tools/bench.py", ["--replot", "docs/bench-lavapipe.json"], "--replot JSON needs --plot FILE.png"),
    ("tools/bench.py", ["--replot", "README.md", "--plot", "/tmp/never.png"], "not a JSON file written by bench.py"),
    ("tools/bench.py", ["--gemm-only", "--no-gemm"], "--gemm-only takes neither --graphs-only nor --no-gemm"),
    ("tools/bench_against.py", ["no-such-revision", "--cases", "relu_grad float32 packed"],
     "'no-such-revision' is neither a directory nor a git revision"),
    ("tools/bench_against.py", ["HEAD", "--cases", "relu_grad float64 packed"], "unknown case"),
    ("tools/bench_against.py", ["HEAD", "--cases", "relu_grad float32 packed", "--rounds", "0"],
     "'0' is not a positive integer"),
    ("tools/demo.py", ["--adapter", "7"], "adapter '7' is not an adapter index"),
    ("tools/gen_docs.py", ["--chek"], "unrecognized arguments: --chek"),
    ("tools/fit_gauss_tail.py", ["extra"], "unrecognized arguments: extra"),
    ("tools/dump_shaders.py", ["relu_grad", "--dtype", "float32", "--sizes", "4", "--out", "/no-such-dmlpy-dir/out"],
     "argument --out: '/no-such-dmlpy-dir/out': its parent '/no-such-dmlpy-dir' does not exist"),
    ("tools/gpu_check.py", ["--python", "/no-such-dmlpy-dir/python"],
     "argument --python: /no-such-dmlpy-dir/python cannot run: No such file or directory"),
    ("tools/soak.py", ["--seconds", "soon"], "argument --seconds"),
    ("tools/soak.py", ["--seconds", "-1"], "argument --seconds: -1.0 must be more than 0"),
    ("tools/soak.py", ["--threads", "0"], "argument --threads: 0 must be at least 1"),
]


@pytest.mark.parametrize("tool, args, message", USAGE_ERRORS, ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_usage_errors_exit_2_with_the_reason(tool, args, message):
    result = run_tool(tool, *args)
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr, result.stderr


def test_a_short_soak_checks_results_and_says_it_does_not_judge_memory():
    result = run_tool("tools/soak.py", "--seconds", "2", "--threads", "1")
    assert result.returncode == 0, result.stderr
    assert result.stderr.startswith("soak: 2 s of mixed load from 1 thread(s) on ")  # at once, not after the run
    assert "errors 0" in result.stdout and "memory growth not judged: a run under 600 s" in result.stdout


def test_dump_without_out_prints_the_glsl_and_the_disassembly_and_writes_nothing(tmp_path):
    result = subprocess.run([sys.executable, str(ROOT / "tools/dump_shaders.py"), "hard_sigmoid_grad", "--dtype",
                             "float16", "--sizes", "2,3"], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "#version 450" in result.stdout and "#define PATH_PACKED" in result.stdout
    assert "OpEntryPoint GLCompute" in result.stdout and not list(tmp_path.iterdir())


def test_bench_replot_redraws_a_saved_run(tmp_path):
    picture = tmp_path / "bench.png"
    result = run_tool("tools/bench.py", "--replot", "docs/bench-lavapipe.json", "--plot", picture)
    assert result.returncode == 0, result.stderr
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bench_plot_without_matplotlib_fails_before_the_run(tmp_path):
    """matplotlib hidden from the tool: it must stop at once, with the hint, not after the run."""
    hide = ("import runpy, sys; sys.modules['matplotlib'] = None; "
            f"sys.argv = ['tools/bench.py', '--plot', {str(tmp_path / 'b.png')!r}]; "
            "runpy.run_path('tools/bench.py', run_name='__main__')")
    result = run_tool("-c", hide)
    assert result.returncode == 2 and "--plot needs matplotlib: pip install matplotlib" in result.stderr
    assert "copy" not in result.stdout  # no table: nothing was measured


def test_dump_shows_the_arithmetic_a_profiled_gpu_gets():
    result = run_tool("tools/dump_shaders.py", "hard_sigmoid_grad", "--dtype", "float32", "--sizes", "64",
                      "--profile", "nvidia-h100")
    assert result.returncode == 0, result.stderr
    assert "planned as nvidia-h100: FP32 subnormals flush; float controls DENORMALS_EXACT, EMULATE_FLUSH" \
        in result.stdout
    assert "#define DENORMALS_EXACT" in result.stdout and "float dml_mul(float a, float b)" in result.stdout
