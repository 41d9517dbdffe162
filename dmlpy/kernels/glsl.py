"""The GLSL a kernel stage becomes: a file of shaders/ with its `#include`s expanded, the
headers rendered for the desc standing in for theirs, and the stage's `#define`s placed after
`#version`. The text is the unit compiled and cached, and what tools/dump_shaders.py shows."""

from __future__ import annotations

import functools
import importlib.resources
import re
from pathlib import Path

from ..base.errors import InstallationError, ShaderCompilationError

_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"\s*$')


@functools.lru_cache(maxsize=64)
def _read_lines(path: Path, modified_ns: int) -> tuple[str, ...]:
    """A shader file's lines, read once per version of the file."""
    return tuple(path.read_text().splitlines())


@functools.cache
def shader_dir() -> Path:
    """The GLSL files: package data (dmlpy/shaders) in an installed dmlpy; a source checkout,
    imported from its own directory, keeps them in its top-level shaders/ (pyproject.toml maps
    that folder into the wheel)."""
    packaged = Path(str(importlib.resources.files("dmlpy") / "shaders"))
    checkout = Path(__file__).resolve().parents[2] / "shaders"
    for candidate in (packaged, checkout):
        if (candidate / "elementwise.comp").is_file():
            return candidate
    raise InstallationError(f"dmlpy's shaders are missing (looked in {packaged} and {checkout}): the installation "
                            "is incomplete; reinstall dmlpy from a wheel or a checkout (pip install .)")


def _expand(path: Path, seen: set[Path], generated: dict[str, tuple[str, ...]]) -> list[str]:
    lines = []
    for line in _read_lines(path, path.stat().st_mtime_ns):
        match = _INCLUDE.match(line)
        if not match:
            lines.append(line)
            continue
        name = match.group(1)
        if name in generated:  # a header rendered for this desc (dmlpy/expr.py)
            lines.append(f"// ---- begin {name} (generated)")
            lines.extend(generated[name])
            lines.append(f"// ---- end {name}")
            continue
        included = (path.parent / name).resolve()
        if included not in seen:  # each header once, like #pragma once
            seen.add(included)
            lines.append(f"// ---- begin {name}")
            lines.extend(_expand(included, seen, generated))
            lines.append(f"// ---- end {name}")
    return lines


def shader_source(shader_file: str, defines: dict[str, object],
                  generated: dict[str, tuple[str, ...]] | None = None) -> str:
    """The self-contained GLSL for `shader_file` specialised by `defines`, with `generated`
    headers (name -> lines) standing in for those `#include`s."""
    path = shader_dir() / shader_file
    if not path.is_file():
        raise InstallationError(f"the shader {shader_file} is missing from {shader_dir()}: the installation is "
                                "incomplete; reinstall dmlpy")
    lines = _expand(path, set(), generated or {})
    if not lines or not lines[0].startswith("#version"):
        raise ShaderCompilationError(f"{shader_file} must start with #version")
    define_lines = [f"#define {name} {value}".rstrip() for name, value in defines.items()]
    return "\n".join([lines[0], f"// {shader_file}, specialised by dmlpy", *define_lines, *lines[1:]]) + "\n"
