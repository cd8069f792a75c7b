# alloclab — the lab's entry points. `make run-all` runs the main job, `make test` the tests.
CARGO ?= cargo
SIZE ?= 1000000
OUT ?= results
ALLOCLAB := target/release/alloclab
EXPERIMENTS := $(wildcard experiments/*.toml)

CALLS ?= 200
RUNS ?= 6

.PHONY: build test run-all compare lint numpy bench-numpy bench-compare exec-numpy serve-redis sweep-numpy trace-numpy man clean

## build: the driver, the three worker binaries and the preload libraries of `exec`
## (release, for this machine's CPU)
build:
	$(CARGO) build --release --bins --examples

## test: every unit and integration test (release build, so the workers are the real ones),
## one test more at a time than the machine has cores: a test waits on the processes it
## starts, and the extra one keeps every core busy (2 cores: 39 s against 45 s, measured)
TEST_THREADS ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 1) + 1 )))
test:
	$(CARGO) test --release -- --test-threads $(TEST_THREADS)

## run-all: every experiment in experiments/ into $(OUT)/<experiment>/, then the founding
## case as a whole program under every allocator (alloclab exec) into $(OUT)/exec-temporaries/
## and, where NumPy is installed, NumPy's func1/func2 into $(OUT)/exec-numpy-func{1,2}/
## (QUICK=1: reduced matrix and fewer runs for a smoke test; RESUME=1: keep runs already done);
## last, $(OUT)/index.html: the run's answer on one page, with a link to every folder's page
run-all: build
	$(ALLOCLAB) run --out $(OUT) $(if $(QUICK),--quick) $(if $(RESUME),--resume) $(EXPERIMENTS)
	$(ALLOCLAB) exec --runs $(if $(QUICK),2,$(RUNS)) --out $(OUT)/exec-temporaries -- target/release/examples/temporaries --iterations $(if $(QUICK),20,100)
	@$(MAKE) --no-print-directory exec-numpy EXEC_OUT=$(OUT) $(if $(QUICK),RUNS=1 CALLS=20)
	$(ALLOCLAB) report $(OUT)

## compare: all allocators x all variants of the NumPy case at SIZE elements
compare: build
	$(ALLOCLAB) compare --size $(SIZE)

## man: the man pages (target/man/alloclab*.1; read with `man -l target/man/alloclab.1`) and
## shell completions (target/completions/: bash, zsh, fish, elvish, PowerShell), generated
## from the command-line definitions
man: build
	$(ALLOCLAB) generate man --out target/man
	$(ALLOCLAB) generate completions --out target/completions

## bench-compare: how fast compare's verdicts become trustworthy (seconds, interval widths,
## verdicts against a --precision 2 reference, A/A false verdicts), as ratios in one session;
## NEIGHBOUR=1: also beside a standard noisy neighbour (stress-ng, one CPU and one memory-
## bandwidth stressor on one core)
bench-compare: build
	python3 bench/compare_precision.py --size $(SIZE) $(if $(NEIGHBOUR),--neighbour)

## lint: formatting and clippy, as CI checks them
lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --release --all-targets -- -D warnings

## numpy: NumPy's func1/func2 timed by themselves (needs: pip install numpy)
numpy:
	python3 experiments/numpy_temporaries.py --size $(SIZE)

## bench-numpy: NumPy against the lab's in-place kernel, as ratios in one run
bench-numpy: build
	python3 bench/numpy_vs_lab.py --size $(SIZE)

## exec-numpy: NumPy's func1 and func2 as whole programs (CALLS calls each per run, RUNS runs)
## under every allocator with `alloclab exec` — where NumPy is installed (pip install numpy);
## EXEC_OUT=dir also writes dir/exec-numpy-func1/ and dir/exec-numpy-func2/
exec-numpy: build
	@if python3 -c "import numpy" 2>/dev/null; then \
	  for f in func1 func2; do \
	    echo "== $$f: python3 experiments/numpy_temporaries.py --size $(SIZE) --calls $(CALLS) --only $$f"; \
	    $(ALLOCLAB) exec --runs $(RUNS) $(if $(EXEC_OUT),--out $(EXEC_OUT)/exec-numpy-$$f) -- python3 experiments/numpy_temporaries.py --size $(SIZE) --calls $(CALLS) --only $$f || exit $$?; \
	    echo; \
	  done; \
	else \
	  echo "exec-numpy: skipped, NumPy is not installed for python3 (pip install numpy)"; \
	fi

## serve-redis: redis-server (Debian's package) under glibc, jemalloc, mimalloc and tcmalloc,
## driven at RATES requests/s over RESP, open loop, into $(OUT)/serve-redis/ — where
## redis-server is installed (apt-get install redis-server)
RATES ?= 10k,40k
serve-redis: build
	@if command -v redis-server >/dev/null 2>&1; then \
	  $(ALLOCLAB) serve --allocators system,jemalloc,mimalloc,tcmalloc --rates $(RATES) --out $(OUT)/serve-redis -- redis-server --port '{port}' --save '' --appendonly no; \
	else \
	  echo "serve-redis: skipped, redis-server is not installed (apt-get install redis-server)"; \
	fi

## trace-numpy: NumPy's func1 and func2 traced under every allocator, each fault and memory
## syscall put at the Python line behind it, into $(OUT)/trace-numpy-func{1,2}/ (needs perf
## events and, for the lines, CPython 3.12+ with NumPy: PYTHON=path/to/python3.12)
PYTHON ?= python3
trace-numpy: build
	@if $(PYTHON) -c "import numpy" 2>/dev/null; then \
	  for f in func1 func2; do \
	    echo "== $$f: $(PYTHON) experiments/numpy_temporaries.py --size $(SIZE) --calls $(CALLS) --only $$f"; \
	    $(ALLOCLAB) trace --runs 2 --out $(OUT)/trace-numpy-$$f -- $(PYTHON) experiments/numpy_temporaries.py --size $(SIZE) --calls $(CALLS) --only $$f || exit $$?; \
	    echo; \
	  done; \
	else \
	  echo "trace-numpy: skipped, NumPy is not installed for $(PYTHON) (PYTHON=path/to/python3.12 with NumPy)"; \
	fi

## sweep-numpy: NumPy's func2 (1e4..1e6 elements, 200 calls) and func1 (1e6..8e6, 30 calls,
## THP off: NumPy asks for huge pages above 4 MiB, which makes fault counts vary by chance)
## swept over sizes under glibc, jemalloc and mimalloc with `alloclab sweep`, every change
## bisected to the exact size, into $(OUT)/sweep-numpy-func{1,2}/ — where NumPy is installed
sweep-numpy: build
	@if python3 -c "import numpy" 2>/dev/null; then \
	  $(ALLOCLAB) sweep --sizes 1e4..1e6 --calls 200 --out $(OUT)/sweep-numpy-func2 -- python3 experiments/numpy_temporaries.py --size {size} --calls {calls} --only func2 && \
	  $(ALLOCLAB) sweep --sizes 1e6..8e6 --per-octave 1 --calls 30 --thp never --out $(OUT)/sweep-numpy-func1 -- python3 experiments/numpy_temporaries.py --size {size} --calls {calls} --only func1; \
	else \
	  echo "sweep-numpy: skipped, NumPy is not installed for python3 (pip install numpy)"; \
	fi

clean:
	$(CARGO) clean
