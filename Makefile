# Every target that runs code first makes .venv and installs tlasim into it,
# so a fresh clone needs nothing but `make demo` or `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test test-quick lint bench check-specs conformance clean java

# The report tests and benchmark load pages in headless Chromium from
# Debian's package; installed here only when missing (sudo unless root).
CHROMIUM := /usr/bin/chromium
$(CHROMIUM):
	SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	$$SUDO apt-get install -y --no-install-recommends chromium || \
	{ $$SUDO apt-get update && $$SUDO apt-get install -y --no-install-recommends chromium; }

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

# An editable install leaves tlasim's own modules uncompiled (pip compiles
# what a wheel installs), and where PYTHONDONTWRITEBYTECODE is set nothing
# ever writes their bytecode: every process then compiles them again as it
# imports them, half of its import time (0.5 s against 0.27 s measured). So
# each target that runs code brings the bytecode up to date first; only
# changed files are compiled again.
BYTECODE := $(BIN)/python -m compileall -q -j 0 sim protocols faults tracing specs bench >/dev/null

demo: $(STAMP)
	$(BYTECODE)
	$(BIN)/tlasim campaign twopc --seeds 1:301
	$(BIN)/tlasim campaign shardsplit --seeds 1:101
	$(BIN)/tlasim campaign snapshot --seeds 1:101

# The whole suite; tests marked `slow` (fuzzing, TLC model checks, long
# sweeps) run at the bounded counts CI can afford. test-quick leaves them out
# for local work. One worker per core; a test file stays on one worker, so
# the caches its tests share (a bug variant's first failing seed, say) hold.
# TLASIM_BROWSER=required: the browser tests fail, not skip, without Chromium.
PYTEST := TLASIM_BROWSER=required $(BIN)/python -m pytest -q -n auto --dist loadfile

test: $(STAMP) $(CHROMIUM)
	$(BYTECODE)
	$(PYTEST)

test-quick: $(STAMP) $(CHROMIUM)
	$(BYTECODE)
	$(PYTEST) -m "not slow"

# mypy follows imports by path, not through the editable install's import
# hook, so it reads the code through a tree of links named as installed.
TYPECHECK := build/typecheck/tlasim
lint: $(STAMP)
	$(BIN)/ruff check sim protocols faults tracing tests bench
	rm -rf $(TYPECHECK) && mkdir -p $(TYPECHECK)
	for d in sim protocols faults tracing specs; do ln -s ../../../$$d $(TYPECHECK)/$$d; done
	MYPYPATH=build/typecheck $(BIN)/mypy

bench: $(STAMP) $(CHROMIUM)
	$(BYTECODE)
	$(BIN)/python -m bench

check-specs: $(STAMP)
	$(BIN)/tlasim check-specs

# Issue 30's looseness report for every protocol (docs/conformance.md):
# minutes, so make test runs only the quick protocols' half of it.
conformance: $(STAMP)
	$(BIN)/tlasim conformance

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache

# tlasim-tlc.jar: tlasim's Java definitions for TLC (tracing/tla/java/src).
# The jar is committed, so neither make demo nor make test needs a JDK;
# rebuild it here after changing the Java source (needs javac 11 or newer).
# It records the sources' sha256, which a test compares with the sources.
JAVA_DIR := tracing/tla/java
java:
	rm -rf build/java && mkdir -p build/java/tlasim
	javac --release 11 -nowarn -cp "$$($(BIN)/python -c 'from tlasim.tracing.tla.tlc import find_tla2tools; print(find_tla2tools())')" \
	    -d build/java $$(find $(JAVA_DIR)/src -name '*.java' | LC_ALL=C sort)
	$(BIN)/python -c 'from tlasim.tracing.tla.tlc import java_source_digest; print(java_source_digest())' > build/java/tlasim/source.sha256
	jar --create --date=2020-01-01T00:00:00Z --no-manifest --file $(JAVA_DIR)/tlasim-tlc.jar -C build/java .
