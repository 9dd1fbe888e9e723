# Every target that runs code first makes .venv and installs tlasim into it,
# so a fresh clone needs nothing but `make demo` or `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test test-quick lint bench check-specs clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/tlasim campaign twopc --seeds 1:51 --validate all
	$(BIN)/tlasim campaign shardsplit --seeds 1:21 --validate all
	$(BIN)/tlasim campaign snapshot --seeds 1:21 --validate all

# The whole suite; tests marked `slow` (fuzzing, TLC model checks, long
# sweeps) run at the bounded counts CI can afford. test-quick leaves them out
# for local work. One worker per core; a test file stays on one worker, so
# the caches its tests share (a bug variant's first failing seed, say) hold.
PYTEST := $(BIN)/python -m pytest -q -n auto --dist loadfile

test: $(STAMP)
	$(PYTEST)

test-quick: $(STAMP)
	$(PYTEST) -m "not slow"

lint: $(STAMP)
	$(BIN)/ruff check sim protocols faults tracing tests bench
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python -m bench

check-specs: $(STAMP)
	$(BIN)/tlasim check-specs

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
