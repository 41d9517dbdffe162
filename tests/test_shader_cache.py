"""The on-disk SPIR-V cache and the compiler's failures."""

import os
import subprocess
import sys

import pytest

import dmlpy as dml
from dmlpy.runtime import shader_compiler
from dmlpy.runtime.shader_compiler import SPIRV_MAGIC, compile_glsl


@pytest.fixture
def device():
    """A device of its own: a device remembers the shaders it compiled, which would hide the disk cache."""
    with dml.create_device() as device:
        yield device


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DMLPY_CACHE_DIR", str(tmp_path))
    return tmp_path


def compile_relu_grad(device, sizes=(3, 7), data_type=dml.TensorDataType.FLOAT16):
    tensor = dml.BufferTensorDesc(data_type, sizes)
    return device.compile_operator(device.create_operator(dml.ActivationReluGradOperatorDesc(tensor, tensor, tensor)))


def test_second_compile_of_a_desc_is_a_cache_hit(device, fresh_cache, monkeypatch):
    first = compile_relu_grad(device)
    assert not first.cache_hit and len(list(fresh_cache.glob("*.spv"))) == len(first.spirv)  # one per stage

    def no_glslang(*args, **kwargs):
        raise AssertionError("glslang ran although the cache holds this shader")

    monkeypatch.setattr(shader_compiler.subprocess, "run", no_glslang)
    second = compile_relu_grad(device)
    assert second.cache_hit and second.spirv == first.spirv


def test_a_desc_that_needs_other_code_misses(device, fresh_cache):
    compile_relu_grad(device)
    assert not compile_relu_grad(device, data_type=dml.TensorDataType.FLOAT32).cache_hit


def test_packed_descs_of_any_size_share_one_shader(device, fresh_cache):
    # Element counts are push constants, so only the layout and the data type specialise.
    first = compile_relu_grad(device, sizes=(3, 7))
    assert compile_relu_grad(device, sizes=(1000, 3)).spirv == first.spirv


@pytest.mark.parametrize("damage", [
    lambda blob: blob[:-4],  # truncated
    lambda blob: blob[:40] + bytes([blob[40] ^ 1]) + blob[41:],  # one bit flipped in the SPIR-V
    lambda blob: b"",  # empty
    lambda blob: blob[:32] + b"junk",  # digest of other bytes
])
def test_a_damaged_entry_is_rebuilt_not_used(device, fresh_cache, damage):
    good = compile_relu_grad(device)
    entry = fresh_cache / shader_compiler.cache_entry_name(good.sources[0])  # the main stage's
    entry.write_bytes(damage(entry.read_bytes()))
    with dml.create_device() as other:
        rebuilt = compile_relu_grad(other)
    assert not rebuilt.cache_hit and rebuilt.spirv == good.spirv and rebuilt.spirv[0].startswith(SPIRV_MAGIC)
    with dml.create_device() as other:
        assert compile_relu_grad(other).cache_hit


def test_compile_error_carries_the_log_and_the_kept_source(fresh_cache):
    with pytest.raises(dml.ShaderCompilationError) as error:
        compile_glsl("#version 450\nlayout(local_size_x = 1) in;\nvoid main() { undeclared = 1; }\n")
    message = str(error.value)
    assert "undeclared" in message and "source kept at" in message
    kept = message.split("source kept at ")[1].split(")")[0]
    assert "undeclared" in open(kept).read()


def test_missing_glslang_is_a_dml_error(device, fresh_cache, monkeypatch):
    monkeypatch.setenv("DMLPY_GLSLANG", str(fresh_cache / "no-such-glslangValidator"))
    with pytest.raises(dml.ShaderCompilationError, match="could not run"):
        compile_relu_grad(device)


def test_unwritable_cache_still_compiles(device, tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("DMLPY_CACHE_DIR", str(blocker / "cache"))
    assert not compile_relu_grad(device).cache_hit


COMPILE_ONE_SHADER = """
from dmlpy.runtime.shader_compiler import compile_glsl
assert not compile_glsl("#version 450\\nlayout(local_size_x = 1) in;\\nvoid main() {}\\n").cache_hit
"""


@pytest.mark.parametrize("xdg_cache_home", ["xdg", "", None], ids=["set", "empty", "unset"])
def test_without_dmlpy_cache_dir_the_cache_is_the_users_cache_directory(tmp_path, xdg_cache_home):
    """On Linux $XDG_CACHE_HOME/dmlpy/spirv; ~/.cache/dmlpy/spirv when XDG_CACHE_HOME is unset or
    empty (the XDG spec treats both alike), never a directory relative to where Python runs."""
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    environment = {k: v for k, v in os.environ.items() if k not in ("DMLPY_CACHE_DIR", "XDG_CACHE_HOME")}
    environment["HOME"] = str(home)
    if xdg_cache_home is not None:
        environment["XDG_CACHE_HOME"] = str(tmp_path / xdg_cache_home) if xdg_cache_home else ""
    result = subprocess.run([sys.executable, "-c", COMPILE_ONE_SHADER], cwd=work, env=environment,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    expected = (tmp_path / "xdg" if xdg_cache_home else home / ".cache") / "dmlpy" / "spirv"
    assert len(list(expected.glob("*.spv"))) == 1
    assert list(work.iterdir()) == []


def test_tool_lookups_made_in_a_parent_serve_racing_threads_and_a_forked_child(tmp_path):
    """The compiler's cached lookups (where glslang is, the binary behind a cmeel launcher, its
    version: docs/ownership.md) are made once; threads racing the first compile and a child
    forked after it all compile, each to the SPIR-V the parent gets for the same source."""
    from child import run_child

    result = run_child(f"""
        os.environ["DMLPY_CACHE_DIR"] = {str(tmp_path / "cache")!r}
        from dmlpy.runtime.shader_compiler import compile_glsl
        def source(k):
            return f"#version 450\\nlayout(local_size_x = {{k + 1}}) in;\\nvoid main() {{{{}}}}\\n"
        results = {{}}
        threads = [threading.Thread(target=lambda k=k: results.__setitem__(k, compile_glsl(source(k)).spirv))
                   for k in range(8)]
        for t in threads: t.start()
        for t in threads: t.join()
        assert len(results) == 8 and all(s[:4] == b"\\x03\\x02\\x23\\x07" for s in results.values())
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            spirv = compile_glsl(source(20)).spirv
            os.write(write, spirv)
            os._exit(0)
        os.close(write)
        from_child = b"".join(iter(lambda: os.read(read, 65536), b""))
        assert os.waitpid(pid, 0)[1] == 0
        os.environ["DMLPY_CACHE_DIR"] = {str(tmp_path / "other")!r}
        assert from_child == compile_glsl(source(20)).spirv
        print("ok")
    """)
    assert result.returncode == 0 and result.stdout.split() == ["ok"], result.stderr
