# Every target that runs code first makes .venv and installs tlasim into it,
# so a fresh clone needs nothing but `make demo` or `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test lint bench check-specs clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/tlasim campaign twopc --seeds 1:51 --validate all
	$(BIN)/tlasim campaign shardsplit --seeds 1:21 --validate all
	$(BIN)/tlasim campaign snapshot --seeds 1:21 --validate all

test: $(STAMP)
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check sim protocols faults tracing tests bench
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python -m bench

check-specs: $(STAMP)
	$(BIN)/tlasim check-specs

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
