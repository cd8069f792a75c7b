# alloclab — the lab's entry points. `make run-all` runs the main job, `make test` the tests.
CARGO ?= cargo
SIZE ?= 1000000
OUT ?= results
ALLOCLAB := target/release/alloclab
EXPERIMENTS := $(wildcard experiments/*.toml)

CALLS ?= 200
RUNS ?= 5

.PHONY: build test run-all compare lint numpy bench-numpy exec-numpy clean

## build: the driver, the three worker binaries and the preload libraries of `exec`
## (release, for this machine's CPU)
build:
	$(CARGO) build --release --bins --examples

## test: every unit and integration test (release build, so the workers are the real ones)
test:
	$(CARGO) test --release

## run-all: every experiment in experiments/ into $(OUT)/<experiment>/ (QUICK=1: reduced
## matrix for a smoke test; RESUME=1: keep runs already done)
run-all: build
	$(ALLOCLAB) run --out $(OUT) $(if $(QUICK),--quick) $(if $(RESUME),--resume) $(EXPERIMENTS)

## compare: all allocators x all variants of the NumPy case at SIZE elements
compare: build
	$(ALLOCLAB) compare --size $(SIZE)

## lint: formatting and clippy, as CI checks them
lint:
	$(CARGO) fmt --check
	$(CARGO) clippy --release --all-targets -- -D warnings

## numpy: NumPy's func1/func2 timed by themselves (needs: pip install numpy)
numpy:
	python3 experiments/numpy_temporaries.py --size $(SIZE)

## bench-numpy: NumPy against the lab's in-place kernel, as ratios in one run
bench-numpy: build
	python3 bench/numpy_vs_lab.py --size $(SIZE)

## exec-numpy: NumPy's func1 and func2 as whole programs (CALLS calls each per run) under
## every allocator with `alloclab exec` — where NumPy is installed (pip install numpy)
exec-numpy: build
	@if python3 -c "import numpy" 2>/dev/null; then \
	  for f in func1 func2; do \
	    echo "== $$f: python3 experiments/numpy_temporaries.py --size $(SIZE) --calls $(CALLS) --only $$f"; \
	    $(ALLOCLAB) exec --runs $(RUNS) -- python3 experiments/numpy_temporaries.py --size $(SIZE) --calls $(CALLS) --only $$f || exit $$?; \
	    echo; \
	  done; \
	else \
	  echo "exec-numpy: skipped, NumPy is not installed for python3 (pip install numpy)"; \
	fi

clean:
	$(CARGO) clean
