"""The shader dump tool, the docs generator and the demo, run as a user runs them."""

import subprocess
import sys
from pathlib import Path

import pytest

import dmlpy as dml
from dmlpy.shader_compiler import find_tool

ROOT = Path(__file__).resolve().parent.parent


def run_tool(*args):
    return subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True, cwd=ROOT, timeout=300)


LAYOUTS = [["--sizes", "2,3,4"], ["--sizes", "2,3,4", "--strides", "12,4,1"],
           ["--sizes", "3,5", "--input-tensor-strides", "1,3"],
           ["--sizes", "7", "--output-gradient-tensor-strides", "2"]]


@pytest.mark.parametrize("name", sorted(dml.OPERATORS))
@pytest.mark.parametrize("dtype", ["float32", "float16", "int8"])
@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda a: " ".join(a))
def test_dumped_spirv_passes_spirv_val(tmp_path, name, dtype, layout):
    result = run_tool("tools/dump_shaders.py", name, "--dtype", dtype, *layout, "--out", tmp_path)
    assert result.returncode == 0, result.stderr
    paths = [Path(line) for line in result.stdout.splitlines() if not line.startswith("#")]
    assert paths and len(paths) % 3 == 0 and all(p.exists() and p.name.startswith(name) for p in paths)
    for comp, spv, spvasm in zip(paths[::3], paths[1::3], paths[2::3]):
        assert (comp.suffix, spv.suffix, spvasm.suffix) == (".comp", ".spv", ".spvasm")
        validation = subprocess.run([find_tool("spirv-val"), str(spv)], capture_output=True, text=True)
        assert validation.returncode == 0, validation.stdout + validation.stderr
        assert "OpEntryPoint GLCompute" in spvasm.read_text()
        # The dumped GLSL is self-contained: it compiles by hand to the same SPIR-V.
        again = tmp_path / "again.spv"
        subprocess.run([find_tool("glslangValidator"), "-V", "--target-env", "vulkan1.0", "-o", str(again),
                        str(comp)], check=True, capture_output=True)
        assert again.read_bytes() == spv.read_bytes()


def test_dump_reports_the_path_taken(tmp_path):
    packed = run_tool("tools/dump_shaders.py", "relu_grad", "--dtype", "float16", "--sizes", "4", "--out", tmp_path)
    strided = run_tool("tools/dump_shaders.py", "relu_grad", "--dtype", "float16", "--sizes", "2,2",
                       "--output-gradient-tensor-strides", "1,2", "--out", tmp_path)
    assert "path packed" in packed.stdout and "_packed.comp" in packed.stdout
    assert "path strided" in strided.stdout
    assert "#define PATH_STRIDED" in (tmp_path / "relu_grad_float16_strided.comp").read_text()


@pytest.mark.parametrize("args, message", [
    (["--dtype", "uint8", "--sizes", "2,3"], "input_tensor.data_type UINT8 is not supported"),
    (["--dtype", "float32", "--sizes", "2,0"], "BufferTensorDesc.sizes[1] is 0"),
    (["--dtype", "float32", "--sizes", "2,3", "--output-gradient-tensor-strides", "0,1"], "write any element twice"),
])
def test_invalid_desc_exits_non_zero_with_the_message(tmp_path, args, message):
    result = run_tool("tools/dump_shaders.py", "relu_grad", *args, "--out", tmp_path)
    assert result.returncode == 1 and message in result.stderr and "Traceback" not in result.stderr


def test_help_documents_every_option():
    result = run_tool("tools/dump_shaders.py", "--help")
    assert result.returncode == 0
    for option in ("--dtype", "--sizes", "--strides", "--input-tensor-strides", "--output-gradient-tensor-strides",
                   "--adapter", "--out", "relu_grad", "ACTIVATION_RELU_GRAD"):
        assert option in result.stdout


def test_operator_docs_are_generated_from_the_declarations():
    result = run_tool("tools/gen_docs.py", "--check")
    assert result.returncode == 0, result.stderr


def test_demo_runs_and_is_exact():
    result = run_tool("tools/demo.py")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "bit-exact against NumPy np.where(x > 0, dy, 0): True" in result.stdout
