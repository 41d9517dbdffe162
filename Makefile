# `make demo` and `make test` set everything up (idempotently) and run.
PY := .venv/bin/python
export DMLPY_CACHE_DIR ?= $(CURDIR)/.cache/spirv
VALIDATION_LOG := /tmp/dmlpy-validation.log

.PHONY: setup demo test fuzz validate soak bench lint clean

setup:
	@bash tools/setup.sh

demo: setup
	$(PY) tools/demo.py

test: setup
	$(PY) -m pytest -q

# Every fuzz strategy with 2000 examples, on a guarded device; statistics show what was rejected.
fuzz: setup
	DMLPY_FUZZ_EXAMPLES=2000 $(PY) -m pytest -q tests/test_fuzz.py --hypothesis-show-statistics

# The suite under VK_LAYER_KHRONOS_validation; any message it logs fails the run. The
# per-operator sweeps (test_activations, test_transcendentals) and the 10,000-call memory
# test are left out: they dispatch the same kernel family, bindings and submissions as the
# layout tests that run here, only with other math, and would double CI's time.
validate: setup
	@DMLPY_WITH_VALIDATION_LAYERS=1 bash tools/setup.sh
	rm -f $(VALIDATION_LOG)
	VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation VK_LAYER_SETTINGS_PATH=$(CURDIR)/tools/validation $(PY) -m pytest -q \
		--ignore=tests/test_activations.py --ignore=tests/test_transcendentals.py --ignore=tests/test_tools.py \
		-k "not ten_thousand_distinct"
	@if [ -s $(VALIDATION_LOG) ]; then echo "validation layer messages:"; cat $(VALIDATION_LOG); exit 1; fi
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
