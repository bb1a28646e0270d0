# Concord: one binary, its Go tests, and the two runtime bindings' tests.
# `make test` is the one command CI runs (.ci/run); it installs what it needs.
GO      ?= go
BIN     := $(CURDIR)/bin/concord
PKGS    := ./...
BENCH   ?= .
COUNT   ?= 6

.PHONY: all build test go-test py-test ts-test bench fuzz lint run clean reliability

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

# Each fuzz target for a short while; FUZZTIME=5m for a longer hunt.
FUZZTIME ?= 20s
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
	    echo "== $$pkg $$t"; $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 1s $$pkg || exit 1; \
	  done; \
	done

# Fault figures for docs/reliability.md at full size (10 s rename storm at
# 1,000 saves/s, a 10,000-file checkout); `make test` runs small versions.
reliability:
	CONCORD_RELIABILITY=1 $(GO) test -count=1 -v -run '^TestFault' ./fileadapter/ | grep -E 'FIGURE|^(---|ok|FAIL)'

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

clean:
	rm -rf bin bench.txt
