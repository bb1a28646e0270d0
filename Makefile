# Concord: one binary, its Go tests, and the two runtime bindings' tests.
# `make test` is the one command CI runs (.ci/run); it installs what it needs.
GO      ?= go
BIN     := $(CURDIR)/bin/concord
PKGS    := ./...
BENCH   ?= .
COUNT   ?= 6

.PHONY: all build test go-test py-test ts-test bench fuzz lint complexity reliability clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/concord

# Every test: Go (race detector on), the Python binding (real OpenHands SDK in a
# 3.12 venv), the TypeScript binding (real OpenCode program).
test: lint build go-test py-test ts-test

go-test:
	$(GO) test -race -count=1 $(PKGS)

py-test: build
	$(MAKE) -C bindings/python test CONCORD_BIN=$(BIN)

ts-test: build
	$(MAKE) -C bindings/ts test CONCORD_BIN=$(BIN)

# Benchmarks; compare runs with benchstat (go run golang.org/x/perf/cmd/benchstat@latest old.txt new.txt).
bench:
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchmem -count $(COUNT) $(PKGS) | tee bench.txt

# Each fuzz target for a short while; FUZZTIME=5m for a longer hunt. Every
# target runs even when one fails; the failures are listed at the end.
FUZZTIME ?= 20s
fuzz:
	@failed=""; \
	for pkg in $$($(GO) list ./...); do \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
	    echo "== $$pkg $$t"; \
	    $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 1s $$pkg || failed="$$failed $$pkg.$$t"; \
	  done; \
	done; \
	if [ -n "$$failed" ]; then echo "fuzz targets failed:"; for f in $$failed; do echo "  $$f"; done; exit 1; fi; \
	echo "every fuzz target passed"

# Linters run at pinned versions through the Go proxy (go run pkg@version):
# nothing to install beforehand, the same result on every machine.
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
UNPARAM     := mvdan.cc/unparam@v0.0.0-20260823230713-2fa3d841b0c8
GOCYCLO     := github.com/fzipp/gocyclo/cmd/gocyclo@v0.6.0

# The load and soak figures of docs/reliability.md at full size (no race detector: it would
# distort latency and memory): 50 agents x 1,000 observations with edits in flight, and
# 10,000 observe/sync rounds with RSS checked flat.
reliability:
	CONCORD_RELIABILITY=1 $(GO) test -count=1 -run 'TestLoadManyAgents|TestSoakFlatMemory' -v -timeout 30m ./cmd/concord

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) run $(STATICCHECK) $(PKGS)
	$(GO) run $(UNPARAM) $(PKGS)

# Production functions above cyclomatic complexity 25 (tests excluded).
complexity:
	$(GO) run $(GOCYCLO) -over 25 -ignore '_test|/testdata/' .

clean:
	rm -rf bin bench.txt
