# `make demo` and `make test` set everything up (idempotently) and run.
PY := .venv/bin/python
export DMLPY_CACHE_DIR ?= $(CURDIR)/.cache/spirv
VALIDATION_LOG := /tmp/dmlpy-validation.log
# pytest-xdist workers: most of a test's time is Python, glslang and waiting on lavapipe's
# threads, so two workers halve the suite's time even on two cores.
PYTEST_WORKERS ?= 2
PYTEST := $(PY) -m pytest -q -n $(PYTEST_WORKERS)

.PHONY: setup demo test test-profiles test-lavapipe-widths gpu-check fuzz validate soak bench lint clean

setup:
	@bash tools/setup.sh

demo: setup
	$(PY) tools/demo.py

test: setup
	$(PYTEST) --durations=15

# The tests whose paths depend on the device's limits and float controls, under the strictest
# shipped profiles: lavapipe planned as a phone GPU that flushes subnormals (subgroups of 64,
# 24 storage buffers, 1 GiB allocations) and as one that keeps them (subgroups of 16,
# workgroups of 512, offsets aligned to 256). tests/test_device_profiles.py runs every
# profile in `make test`, the data-centre GPUs included (a flushing one also plans the
# row-in-private-memory test and trains the MLP).
STRICT_PROFILES := qualcomm-adreno-740 arm-mali-g710
GEMM_EXACTNESS_TESTS := $(addprefix tests/test_gemm.py::test_, float32_random_data_matches_the_reference \
	half_types_convert_exactly_and_round_once adversarial_values_spelled_out alpha_beta_and_c_in_the_subnormal_range \
	strided_and_broadcast_layouts long_k_and_a_square_128 large_products_on_lanes_sharing_rows \
	lanes_sharing_rows_keep_the_bits_on_any_subgroup_and_with_exactness) tests/test_gemm_fusion.py
PROFILE_TESTS := tests/test_relu_grad.py tests/test_layouts.py tests/test_graph.py tests/test_rowwise.py \
	tests/test_elementwise_math.py $(GEMM_EXACTNESS_TESTS)
# The row-in-private-memory test plans its own CPU and GPU profiles whatever the device's; the
# FP32 error sweeps over row lengths hold the documented tree's rounding, which the profile's
# runs of test_rowwise's reference tests and the suite's bit comparisons already cover.
test-profiles: setup
	@for profile in $(STRICT_PROFILES); do \
		echo "== DMLPY_DEVICE_PROFILE=$$profile"; \
		DMLPY_DEVICE_PROFILE=$$profile $(PYTEST) -x $(PROFILE_TESTS) \
			-k "not row_read_once_into_private_memory and not fp32_error_stays_within" || exit 1; \
	done

# lavapipe with 128-bit vectors (subgroups of 4) as well as its default 256 (subgroups of 8):
# the same bits.
test-lavapipe-widths: setup
	LP_NATIVE_VECTOR_WIDTH=128 $(PYTEST) -x tests/test_device_profiles.py tests/test_relu_grad.py \
		tests/test_layouts.py tests/test_rowwise.py tests/test_elementwise_math.py $(GEMM_EXACTNESS_TESTS)

# On a machine with a GPU: the suite and the quick benchmark there, reported in
# docs/devices/<device>.md. Needs no apt: the Python that has dmlpy's dependencies runs it.
GPU_PY ?= $(shell [ -x $(PY) ] && echo $(PY) || echo python3)
gpu-check:
	$(GPU_PY) tools/gpu_check.py

# Every fuzz strategy with 2000 examples, on a guarded device; statistics show what was rejected.
fuzz: setup
	DMLPY_FUZZ_EXAMPLES=2000 $(PY) -m pytest -q tests/test_fuzz.py --hypothesis-show-statistics

# The suite under VK_LAYER_KHRONOS_validation, in two workers; any message it logs fails the
# run. Each worker logs to its own file, $(VALIDATION_LOG).<worker id> (tests/conftest.py):
# the layer truncates the file it opens. The
# per-operator sweeps (test_activations, test_transcendentals, the element-wise family's
# reference sweep, ONNX's node tests) and the 10,000-call memory
# test are left out: they dispatch the same kernel family, bindings and submissions as the
# layout tests that run here, only with other math, and would double CI's time. So is the
# 10,000-cycle memory test: the layer keeps its own record of every object ever created
# (about 26 KiB a cycle with this layer), which is not dmlpy's memory; `make test` runs it
# without the layer. The device profiles' test is left out too: a profile plans other tiles
# and workgroup sizes on lavapipe through the same API calls the suite makes here.
validate: setup
	@DMLPY_WITH_VALIDATION_LAYERS=1 bash tools/setup.sh
	rm -f $(VALIDATION_LOG)*
	VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation VK_LAYER_SETTINGS_PATH=$(CURDIR)/tools/validation $(PYTEST) \
		--ignore=tests/test_activations.py --ignore=tests/test_transcendentals.py --ignore=tests/test_tools.py \
		--ignore=tests/test_elementwise_math.py --ignore=tests/test_onnx_node_tests.py --ignore=tests/test_device_profiles.py \
		-k "not ten_thousand and not every_operator_matches_its_reference"
	@if [ -n "$$(cat $(VALIDATION_LOG)* 2>/dev/null)" ]; then echo "validation layer messages:"; cat $(VALIDATION_LOG)*; exit 1; fi
	@echo "validate: VK_LAYER_KHRONOS_validation reported nothing"

# Ten minutes of mixed load (not in CI).
soak: setup
	$(PY) tools/soak.py --seconds 600

bench: setup
	$(PY) tools/bench.py

lint: setup
	$(PY) -m ruff check dmlpy tools tests

clean:
	rm -rf .cache build *.egg-info
