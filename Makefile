# `make demo` and `make test` set everything up (idempotently) and run.
PY := .venv/bin/python
export DMLPY_CACHE_DIR ?= $(CURDIR)/.cache/spirv

.PHONY: setup demo test lint clean

setup:
	@bash tools/setup.sh

demo: setup
	$(PY) tools/demo.py

test: setup
	$(PY) -m pytest -q

lint: setup
	$(PY) -m ruff check dmlpy tools tests

clean:
	rm -rf .cache build *.egg-info
