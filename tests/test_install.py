"""Installing and first use, as a new user meets them: the wheel in a fresh venv set up the way
the README says, dmlpy without kp, a machine without a Vulkan driver, the host's environment."""

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run_python(code: str, cwd=ROOT, env=None, python=sys.executable):
    return subprocess.run([python, "-c", textwrap.dedent(code)], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=300)


def readme_section(title: str) -> str:
    text = (ROOT / "README.md").read_text()
    match = re.search(rf"^### {re.escape(title)}\n(.*?)(?=^##)", text, re.S | re.M)
    assert match, f"README has no section {title!r}"
    return match.group(1)


RUN_AN_OPERATOR = """
    import os
    before = dict(os.environ)
    import numpy as np
    import dmlpy as dml
    x = np.array([-1.0, 0.0, 2.0, np.nan], np.float32)
    dx = dml.relu_grad(x, np.full(4, 3.0, np.float32))
    assert dx.tolist() == [0.0, 0.0, 3.0, 0.0], dx
    assert "nvidia-h100" in dml.list_device_profiles()  # the profiles are package data
    with dml.create_device(profile="qualcomm-adreno-740") as device:
        assert dml.relu_grad(x, np.full(4, 3.0, np.float32), device=device).tolist() == dx.tolist()
    assert dict(os.environ) == before
    print(dml.__file__)
    print(dml.__version__)
"""


def test_the_wheel_in_a_fresh_venv_set_up_as_the_readme_says_runs_an_operator(tmp_path):
    """README, "Installing into your own environment": tools/setup.sh --venv, then pip install
    of dmlpy, here a wheel built from this checkout; the operator runs from outside the tree."""
    section = readme_section("Installing into your own environment")
    assert "tools/setup.sh --venv" in section and "bin/pip install" in section
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                    str(wheels), str(ROOT)], check=True, capture_output=True, timeout=300)
    [wheel] = wheels.glob("dmlpy-*.whl")
    venv = tmp_path / "venv"
    subprocess.run(["bash", str(ROOT / "tools/setup.sh"), "--venv", str(venv)], check=True, capture_output=True,
                   timeout=600)
    subprocess.run([str(venv / "bin/python"), "-m", "pip", "install", "-q", str(wheel)], check=True,
                   capture_output=True, timeout=300)
    environment = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    result = run_python(RUN_AN_OPERATOR, cwd=tmp_path, env=environment, python=venv / "bin/python")
    assert result.returncode == 0, result.stderr
    installed, version = result.stdout.split()
    package = Path(installed).parent
    assert package.is_relative_to(venv)
    assert (package / "py.typed").exists() and (package / "shaders" / "elementwise.comp").exists()
    assert version == re.search(r'^version = "(.*)"', (ROOT / "pyproject.toml").read_text(), re.M).group(1)
    # An installation that lost its shaders says so, as a DmlError.
    (package / "shaders" / "elementwise.comp").unlink()
    result = run_python("""
        import numpy as np, dmlpy as dml
        try:
            dml.sigmoid(np.zeros(3, np.float16))
        except dml.InstallationError as error:
            print(error)
    """, cwd=tmp_path, env=environment, python=venv / "bin/python")
    assert "the installation is incomplete" in result.stdout, result.stderr


def test_dmlpy_imports_without_kp_and_device_creation_says_how_to_install_it():
    result = run_python("""
        import sys
        sys.modules["kp"] = None  # import kp raises ImportError
        import dmlpy as dml
        from dmlpy.runtime.shader_compiler import compile_desc
        from dmlpy.runtime.vulkan_info import list_adapters
        x = dml.BufferTensorDesc(dml.TensorDataType.FLOAT16, (2, 3))
        desc = dml.ActivationEluGradOperatorDesc(x, x, x, alpha=0.5)
        assert dml.calc_buffer_tensor_size(dml.TensorDataType.FLOAT16, (2, 3)) == 12
        plan, shaders = compile_desc(desc, list_adapters()[0])
        assert shaders[0].spirv[:4] == b"\\x03\\x02\\x23\\x07"
        try:
            dml.create_device()
        except dml.InstallationError as error:
            print(error)
    """)
    assert result.returncode == 0, result.stderr
    assert "Kompute (kp) cannot be imported" in result.stdout and "tools/setup.sh --venv" in result.stdout


def test_a_kp_without_dmlpys_patch_is_refused_with_the_remedy():
    result = run_python("""
        import sys, types
        sys.modules["kp"] = types.ModuleType("kp")  # stock kp: no dmlpy_patch
        import dmlpy as dml
        try:
            dml.create_device()
        except dml.InstallationError as error:
            print(error)
    """)
    assert "lacks dmlpy's patch" in result.stdout and "tools/setup.sh --venv" in result.stdout, result.stderr


def test_a_machine_without_a_vulkan_driver_is_told_what_to_install(tmp_path):
    environment = {**os.environ, "VK_ICD_FILENAMES": str(tmp_path / "none.json"),
                   "VK_DRIVER_FILES": str(tmp_path / "none.json")}
    result = run_python("""
        import dmlpy as dml
        for attempt in (dml.list_adapters, dml.create_device):
            try:
                attempt()
            except dml.InstallationError as error:
                print(type(error).__name__, error)
    """, env=environment)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 2 and all("no driver (ICD)" in line and "mesa-vulkan-drivers" in line
                                   and "vulkaninfo" in line and "list_adapters" in line for line in lines)
    assert "HRESULT 0x887A0004" in lines[0]  # DXGI_ERROR_UNSUPPORTED, as D3D12CreateDevice without a driver


def test_dmlpy_leaves_the_environment_as_it_found_it():
    result = run_python(RUN_AN_OPERATOR + """
    device = dml.create_device()
    device.close()
    assert dict(os.environ) == before
    """)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("arguments", [["--venv"], ["--frobnicate"]])
def test_setup_rejects_bad_arguments_with_exit_2(arguments):
    result = subprocess.run(["bash", str(ROOT / "tools/setup.sh"), *arguments], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 2 and "--venv PATH" in result.stderr


def test_setup_help_shows_both_forms():
    result = subprocess.run(["bash", str(ROOT / "tools/setup.sh"), "--help"], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0 and "tools/setup.sh --venv PATH" in result.stdout
