"""Installing and first use, as a new user meets them: the sdist and its metadata, dmlpy from the
sdist in a fresh venv set up the way the README says, SPIRV-Tools and glslang outside sys.prefix,
dmlpy without kp, a machine without a Vulkan driver, the host's environment."""

import configparser
import email
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
VERSION = re.search(r'^version = "(.*)"', (ROOT / "pyproject.toml").read_text(), re.M).group(1)


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


@pytest.fixture(scope="module")
def sdist(tmp_path_factory) -> Path:
    """dmlpy's sdist as a release builds it (setuptools' PEP 517 hook), from a copy of the
    checkout: an egg-info left in the checkout would carry its old file list into the sdist."""
    source = tmp_path_factory.mktemp("source") / "dmlpy"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", ".cache", "build", "dist", "*.egg-info", "__pycache__", ".hypothesis", ".pytest_cache",
        ".ruff_cache", ".gl", ".whl"))
    dist = tmp_path_factory.mktemp("dist")
    result = run_python(f"from setuptools import build_meta; print(build_meta.build_sdist({str(dist)!r}))",
                        cwd=source)
    assert result.returncode == 0, result.stderr
    return dist / result.stdout.split()[-1]


def run_checked(arguments, cwd, timeout=300):
    result = subprocess.run([str(argument) for argument in arguments], capture_output=True, text=True, cwd=cwd,
                            timeout=timeout)
    assert result.returncode == 0, f"{arguments}: {result.stdout}{result.stderr}"


def test_the_sdist_carries_setup_the_kp_patch_the_license_and_the_shaders(sdist):
    top = f"dmlpy-{VERSION}"
    assert sdist.name == f"{top}.tar.gz"
    with tarfile.open(sdist) as archive:
        names = set(archive.getnames())
        metadata = email.message_from_bytes(archive.extractfile(f"{top}/PKG-INFO").read())
        entry_points = archive.extractfile(f"{top}/dmlpy.egg-info/entry_points.txt").read().decode()
        requirements = archive.extractfile(f"{top}/dmlpy.egg-info/requires.txt").read().decode().split()
    patches = [path.relative_to(ROOT).as_posix() for path in (ROOT / "tools" / "kp").glob("*.patch")]
    shaders = [path.relative_to(ROOT).as_posix() for path in (ROOT / "shaders").iterdir()]
    assert patches and shaders
    for path in ["tools/setup.sh", *patches, "LICENSE", "CHANGELOG.md", "README.md", *shaders, "dmlpy/py.typed"]:
        assert f"{top}/{path}" in names, path
    assert metadata["License"] == "MIT" and "Copyright (c) 2026 The dmlpy authors" in (ROOT / "LICENSE").read_text()
    assert {"License :: OSI Approved :: MIT License", "Operating System :: POSIX :: Linux",
            "Programming Language :: Python :: 3.10", "Programming Language :: Python :: 3.11",
            "Programming Language :: Python :: 3.12", "Topic :: Scientific/Engineering :: Artificial Intelligence",
            "Development Status :: 3 - Alpha", "Typing :: Typed"} <= set(metadata.get_all("Classifier"))
    assert metadata["Requires-Python"] == ">=3.10" and metadata["Keywords"]
    assert "platformdirs" in requirements
    # The long description is the README: a wheel-only user reads there how to get kp.
    assert "tools/setup.sh --venv" in metadata.get_payload()
    scripts = configparser.ConfigParser()
    scripts.read_string(entry_points)
    assert dict(scripts["console_scripts"]) == {"dmlpy-info": "dmlpy.__main__:main",
                                                "dmlpy-dump-shaders": "dmlpy.cli.dump_shaders:main"}


def test_the_sdist_in_a_fresh_venv_set_up_as_the_readme_says_runs_an_operator(tmp_path, sdist):
    """README, "Installing into your own environment": unpack the sdist, run its tools/setup.sh
    with a relative --venv PATH from the directory above, pip install the sdist into that venv;
    the operator runs from outside the tree."""
    section = readme_section("Installing into your own environment")
    top = f"dmlpy-{VERSION}"
    for command in (f"tar -xzf {top}.tar.gz", f"bash {top}/tools/setup.sh --venv", f"bin/pip install {top}.tar.gz"):
        assert command in section, command
    shutil.copy(sdist, tmp_path)
    run_checked(["tar", "-xzf", sdist.name], cwd=tmp_path)
    # The patched kp wheel this checkout already built, so that the test does not build it again.
    for wheels in (ROOT / "build" / "kp").glob("wheels-*"):
        shutil.copytree(wheels, tmp_path / top / "build" / "kp" / wheels.name)
    run_checked(["bash", f"{top}/tools/setup.sh", "--venv", "venv"], cwd=tmp_path, timeout=600)
    venv = tmp_path / "venv"
    assert (venv / "bin/python").exists() and not (tmp_path / top / "venv").exists()
    # The venv setup.sh made has setuptools, so the sdist builds without fetching a build backend.
    run_checked([venv / "bin/pip", "install", "-q", "--no-build-isolation", sdist.name], cwd=tmp_path)
    assert (venv / "bin/dmlpy-info").exists() and (venv / "bin/dmlpy-dump-shaders").exists()
    environment = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    result = run_python(RUN_AN_OPERATOR, cwd=tmp_path, env=environment, python=venv / "bin/python")
    assert result.returncode == 0, result.stderr
    installed, version = result.stdout.split()
    package = Path(installed).parent
    assert package.is_relative_to(venv)
    assert (package / "py.typed").exists() and (package / "shaders" / "elementwise.comp").exists()
    assert version == VERSION
    [dist_info] = package.parent.glob("dmlpy-*.dist-info")
    assert [path.name for path in dist_info.rglob("LICENSE")] == ["LICENSE"]
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


FIND_THE_TOOLS_FROM_ANOTHER_SITE_DIRECTORY = """
    import hashlib, site, sys
    from pathlib import Path
    sys.path.insert(0, {site_packages!r})  # ahead of the interpreter's own packages
    site.addsitedir({site_packages!r})  # its .pth files too, as for the user's site directory
    from dmlpy.runtime.shader_compiler import SPIRV_MAGIC, cache_entry_name, compile_glsl
    source = "#version 450\\nlayout(local_size_x = 1) in;\\nvoid main() {{}}\\n"
    good = compile_glsl(source)
    assert not good.cache_hit and good.spirv.startswith(SPIRV_MAGIC)
    invalid = SPIRV_MAGIC + bytes(range(20))  # a header of the right shape, then nonsense
    entry = Path({cache!r}) / cache_entry_name(source)
    entry.write_bytes(hashlib.sha256(invalid).digest() + invalid)
    rebuilt = compile_glsl(source)
    assert not rebuilt.cache_hit and rebuilt.spirv == good.spirv, "an invalid entry was used"
    print("in process" if "libSPIRV-Tools-shared.so" in Path("/proc/self/maps").read_text() else "not loaded")
"""


@pytest.mark.skipif(sys.prefix == sys.base_prefix, reason="needs a venv and the interpreter it was made from")
def test_glslang_and_spirv_tools_are_found_where_pip_put_them_not_under_sys_prefix(tmp_path):
    """As after `pip install --user`: the packages live in a site directory outside sys.prefix and
    nothing is on PATH. Here the interpreter the venv was made from runs with the venv's
    site-packages added as a site directory."""
    empty = tmp_path / "empty"
    empty.mkdir()
    environment = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "DMLPY_GLSLANG")}
    environment.update(PATH=str(empty), DMLPY_CACHE_DIR=str(tmp_path / "cache"))
    code = FIND_THE_TOOLS_FROM_ANOTHER_SITE_DIRECTORY.format(site_packages=sysconfig.get_paths()["purelib"],
                                                           cache=str(tmp_path / "cache"))
    result = subprocess.run([sys._base_executable, "-s", "-c", textwrap.dedent(code)], capture_output=True,
                            text=True, cwd=tmp_path, env=environment, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["in", "process"]  # SPIRV-Tools' library, not a spirv-val per entry


def test_a_cmeel_launcher_is_bypassed_with_its_library_path(tmp_path, monkeypatch):
    """pip's glslangValidator is a Python script that sets LD_LIBRARY_PATH and runs the binary
    in cmeel.prefix/bin; dmlpy runs that binary itself (no Python start per compile), with the
    same output, whatever LD_LIBRARY_PATH the caller has. Any other executable runs as itself,
    in the caller's environment."""
    from dmlpy.runtime.shader_compiler import find_tool, run_tool

    launcher = find_tool("glslangValidator")
    if launcher is None or b"cmeel_run" not in Path(launcher).read_bytes()[:256]:
        pytest.skip("glslangValidator here is no cmeel launcher")
    through_python = subprocess.run([launcher, "--version"], capture_output=True, text=True, timeout=60)
    direct = run_tool(launcher, ["--version"], capture_output=True, text=True, timeout=60)
    assert direct.returncode == 0 and direct.stdout == through_python.stdout
    spy = tmp_path / "spy"
    spy.write_text("#!/bin/sh\necho \"$0 $LD_LIBRARY_PATH\"\n")
    spy.chmod(0o755)
    monkeypatch.setenv("LD_LIBRARY_PATH", "/caller/lib")
    assert run_tool(str(spy), [], capture_output=True, text=True).stdout.split() == [str(spy), "/caller/lib"]
    shown = run_tool(launcher, ["--version"], capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0 and shown.stdout == through_python.stdout  # with the caller's path set too


@pytest.mark.parametrize("arguments", [["--venv"], ["--frobnicate"]])
def test_setup_rejects_bad_arguments_with_exit_2(arguments):
    result = subprocess.run(["bash", str(ROOT / "tools/setup.sh"), *arguments], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 2 and "--venv PATH" in result.stderr


def test_setup_help_shows_both_forms():
    result = subprocess.run(["bash", str(ROOT / "tools/setup.sh"), "--help"], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0 and "tools/setup.sh --venv PATH" in result.stdout
