# Concord: one binary, its Go tests, and the two runtime bindings' tests.
# `make test` is the one command CI runs (.ci/run); it installs what it needs.
GO      ?= go
BIN     := $(CURDIR)/bin/concord
PKGS    := ./...
BENCH   ?= .
COUNT   ?= 6
# The binary names its commit and date (`concord version`), also where GOFLAGS=-buildvcs=false.
COMMIT  := $(shell git rev-parse --short=12 HEAD 2>/dev/null)
DATE    := $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS := -X main.commit=$(COMMIT) -X main.date=$(DATE)

.PHONY: all build build-feed codex-deps go-test-feed bench-feed test go-test py-test ts-test bench fuzz lint complexity reliability clean chromium \
        dist dist-bin dist-wheel dist-npm dist-test dist-test-wheel dist-test-npm artifact-test

all: build

# concord, and concord-hook beside it: what the hook runtimes' configurations run per tool call
# (a small executable that starts in half concord's time and reaches the session's server).
build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/concord
	$(GO) build -trimpath -o $(BIN)-hook ./cmd/concord-hook

# The binary with the change feed between hosts (serve --feed, NATS JetStream): the NATS client
# adds about 5.5 MB (3.9 MB stripped), so the default plugin binary leaves it out (docs/design.md, "Feed").
FEED_TAGS := feed
build-feed:
	$(GO) build -trimpath -tags $(FEED_TAGS) -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/concord

# Every test: Go (race detector on), the Python binding (real OpenHands SDK in a
# 3.12 venv), the TypeScript binding (real OpenCode and Kilo CLI programs), and the release artifacts
# for this machine installed as a user would (a fresh venv, a fresh OpenCode project).
test: lint build go-test py-test ts-test artifact-test

# internal/geminicli drives the pinned Gemini CLI (bindings/gemini's npm packages) offline.
go-test: go-test-feed chromium codex-deps
	$(MAKE) -C bindings/gemini deps
	$(GO) test -race -count=1 $(PKGS)

# A headless browser for the test that renders `concord audit --html` (cmd/concord,
# TestAuditHTMLInChromium): Debian's chromium, installed when missing (as root, with apt-get);
# elsewhere the test says it is skipped.
chromium:
	@if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then :; \
	elif command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	  echo "installing Debian's chromium (the audit HTML test renders the page in it)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else echo "note: no chromium and no root apt-get: TestAuditHTMLInChromium will be skipped"; fi

# The pinned Codex CLI (@openai/codex) the Codex tests drive against a loopback fake model.
codex-deps:
	$(MAKE) -C bindings/codex deps

# The change feed's tests need the tag: an embedded 3-node JetStream cluster and three
# `concord serve --feed` processes (feed/natsfeed), and the binary's feed settings (cmd/concord).
go-test-feed:
	$(GO) test -race -count=1 -tags $(FEED_TAGS) ./feed/...
	$(GO) test -race -count=1 -tags $(FEED_TAGS) -run 'Feed' ./cmd/concord

# The Python terminal tests run rg as agents do; the pinned ripgrep comes with the TypeScript
# binding's e2e npm packages (@vscode/ripgrep), so it is installed first and put on PATH.
RG_DIR = $(CURDIR)/bindings/ts/e2e-deps/node_modules/@vscode/ripgrep-$(shell node -p 'process.platform + "-" + process.arch' 2>/dev/null)/bin

py-test: build
	$(MAKE) -C bindings/ts e2e-deps
	PATH="$(RG_DIR):$$PATH" $(MAKE) -C bindings/python test CONCORD_BIN=$(BIN)

ts-test: build
	$(MAKE) -C bindings/ts test CONCORD_BIN=$(BIN)

# Benchmarks; compare runs with benchstat (go run golang.org/x/perf/cmd/benchstat@latest old.txt new.txt).
bench:
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchmem -count $(COUNT) $(PKGS) | tee bench.txt

# The change feed's latency, publish on one host to a sync that shows it on another (p50-ms, p99-ms).
bench-feed:
	$(GO) test -tags $(FEED_TAGS) -run '^$$' -bench FeedPublishToSync -benchtime 1000x -count 1 ./feed/natsfeed

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

# The figures of docs/reliability.md at full size, no race detector (it would distort latency and
# memory); `make test` runs small versions of the same tests. Faults: a 10 s rename storm at
# 1,000 saves/s, a 10,000-file checkout, ... Load: 50 agents x 1,000 observations with edits in
# flight. Soak: 10,000 observe/sync rounds with RSS checked flat.
reliability:
	@CONCORD_RELIABILITY=1 $(GO) test -count=1 -v -run '^TestFault' ./fileadapter/ > reliability-faults.log 2>&1; st=$$?; \
	  grep -E 'FIGURE|^(---|ok|FAIL)' reliability-faults.log; exit $$st
	CONCORD_RELIABILITY=1 $(GO) test -count=1 -run 'TestLoadManyAgents|TestSoakFlatMemory' -v -timeout 30m ./cmd/concord


lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) vet -tags $(FEED_TAGS) $(PKGS)
	$(GO) run $(STATICCHECK) $(PKGS)
	$(GO) run $(STATICCHECK) -tags $(FEED_TAGS) $(PKGS)
	$(GO) run $(UNPARAM) $(PKGS)
	GOFLAGS="$$GOFLAGS -tags=$(FEED_TAGS)" $(GO) run $(UNPARAM) $(PKGS)

# Production functions above cyclomatic complexity 25 (tests excluded; gocyclo reads every file, tagged or not).
complexity:
	$(GO) run $(GOCYCLO) -over 25 -ignore '_test|/testdata/' .

clean:
	rm -rf bin bench.txt dist

# ---------------------------------------------------------------------------------------------
# Release artifacts. `make dist` writes into dist/ (gitignored), building everything from this
# checkout (nothing downloaded but the pinned build tools from the package registries):
#   concord_<v>_<os>_<arch>.tar.gz (+ .sha256)   the binary for linux/darwin x amd64/arm64
#   concord_openhands-<v>-py3-none-<platform>.whl the OpenHands binding with the binary inside
#   concord-opencode-<v>-<os>-<cpu>.tgz           the OpenCode plugin with the binary inside
#   SHA256SUMS                                    every artifact above
# The wheel and the npm tarball are for the build platform (DIST_OS/DIST_ARCH to choose another).
# `make dist-test` installs them as a user would and checks that a changed file is repaired.
VERSION   := $(shell sed -n 's/^version = "\(.*\)"$$/\1/p' bindings/python/pyproject.toml)
# Release builds carry the commit's date (the same commit gives the same bytes), not the build time.
DIST_DATE := $(shell TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null)
EPOCH     := $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
DIST_LDFLAGS := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(DIST_DATE)
PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
DIST_OS   ?= $(shell $(GO) env GOOS)
DIST_ARCH ?= $(shell $(GO) env GOARCH)
DIST      := $(CURDIR)/dist
STAGE     := $(DIST)/.stage
SHA256    := $(shell command -v sha256sum >/dev/null 2>&1 && echo sha256sum || echo shasum -a 256)
# Any Python 3.9+ with pip builds the wheel (--ignore-requires-python: the wheel is for 3.12+, where
# the OpenHands SDK runs, but building it needs no SDK); the user-path test needs 3.12+.
PYTHON3   ?= python3
# npm's names for the platform (package.json "os"/"cpu"), and the edit of the packed package.json.
NPM_CPU    = $(if $(filter amd64,$(1)),x64,$(1))
NPM_PLATFORM_JS := const fs = require("fs"), p = JSON.parse(fs.readFileSync("package.json")); \
  p.os = [process.argv[1]]; p.cpu = [process.argv[2]]; delete p.devDependencies; delete p.scripts; \
  fs.writeFileSync("package.json", JSON.stringify(p, null, 2) + "\n")

dist: dist-bin dist-wheel dist-npm
	cd $(DIST) && $(SHA256) concord_$(VERSION)_*.tar.gz concord_openhands-$(VERSION)-*.whl \
	  concord-opencode-$(VERSION)-*.tgz > SHA256SUMS
	@ls -l $(DIST) | sed 1d

# One static binary per platform (and concord-hook), then a tarball holding concord_<v>_<os>_<arch>/{concord,concord-hook,
# LICENSE,README.md} with fixed owner and times, so the same commit gives the same bytes.
dist-bin:
	@test -n "$(VERSION)" || { echo "no version in bindings/python/pyproject.toml"; exit 1; }
	@v="$$(sed -n 's/^  "version": "\(.*\)",$$/\1/p' bindings/ts/package.json)"; \
	  [ "$$v" = "$(VERSION)" ] || { echo "version mismatch: pyproject.toml $(VERSION), package.json $${v:-?}"; exit 1; }
	@set -e; for p in $(PLATFORMS); do \
	  os=$${p%/*}; arch=$${p#*/}; name=concord_$(VERSION)_$${os}_$${arch}; dir=$(STAGE)/bin/$$name; \
	  echo "go build $$os/$$arch"; rm -rf $$dir; mkdir -p $$dir; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags '$(DIST_LDFLAGS)' -o $$dir/concord ./cmd/concord; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags '-s -w -X main.version=$(VERSION)' -o $$dir/concord-hook ./cmd/concord-hook; \
	  cp LICENSE README.md $$dir/; \
	  tar -C $(STAGE)/bin --sort=name --owner=0 --group=0 --numeric-owner --mtime=@$(EPOCH) \
	    -cf - $$name | gzip -9n > $(DIST)/$$name.tar.gz; \
	  (cd $(DIST) && $(SHA256) $$name.tar.gz > $$name.tar.gz.sha256); \
	done

HOST_BIN = $(STAGE)/bin/concord_$(VERSION)_$(DIST_OS)_$(DIST_ARCH)/concord

# The package copied (no tests, caches or venv) beside the binary; setup.py puts the binary in
# the wheel and tags it for DIST_OS/DIST_ARCH. pip fetches the pinned setuptools to build.
dist-wheel: dist-bin
	rm -rf $(STAGE)/python && mkdir -p $(STAGE)/python
	cp -L bindings/python/pyproject.toml bindings/python/setup.py bindings/python/README.md \
	  bindings/python/LICENSE $(STAGE)/python/
	cp -R bindings/python/concord_openhands $(STAGE)/python/
	find $(STAGE)/python -name __pycache__ -prune -exec rm -rf {} +
	rm -f $(DIST)/concord_openhands-*.whl
	SOURCE_DATE_EPOCH=$(EPOCH) CONCORD_WHEEL_BINARY=$(HOST_BIN) CONCORD_WHEEL_GOOS=$(DIST_OS) CONCORD_WHEEL_GOARCH=$(DIST_ARCH) \
	  $(PYTHON3) -m pip wheel --no-deps --ignore-requires-python --disable-pip-version-check -w $(DIST) $(STAGE)/python

# One tarball for the build platform with the binary at bin/concord (where the plugin looks),
# "os"/"cpu" set so npm refuses it elsewhere. Built by the binding's own Makefile (npm ci, tsc,
# bundle), then packed from a copy so the source tree never holds a binary the tests would find.
dist-npm: dist-bin
	$(MAKE) -C bindings/ts build
	rm -rf $(STAGE)/npm && mkdir -p $(STAGE)/npm/dist $(STAGE)/npm/bin
	cp -L bindings/ts/package.json bindings/ts/README.md bindings/ts/LICENSE $(STAGE)/npm/
	cp -R bindings/ts/dist/src bindings/ts/dist/concord-opencode.js $(STAGE)/npm/dist/
	cp $(HOST_BIN) $(STAGE)/npm/bin/concord && chmod 755 $(STAGE)/npm/bin/concord
	cd $(STAGE)/npm && node -e '$(NPM_PLATFORM_JS)' "$(DIST_OS)" "$(call NPM_CPU,$(DIST_ARCH))"
	rm -f $(DIST)/concord-opencode-*.tgz
	cd $(STAGE)/npm && npm pack --silent --pack-destination $(DIST) >/dev/null
	mv $(DIST)/concord-opencode-$(VERSION).tgz \
	  $(DIST)/concord-opencode-$(VERSION)-$(DIST_OS)-$(call NPM_CPU,$(DIST_ARCH)).tgz

# The artifacts as a user installs them (the user-path tests skip unless given an artifact):
# a fresh 3.12 venv gets the wheel and the pinned SDK, and a program with the README's two lines
# gets a repaired read; a fresh OpenCode project npm-installs the tarball, enables it with one
# config line, and the model sees a repair. Neither sets CONCORD_BIN or has concord on PATH.
DIST_VENV := $(DIST)/.test/venv

dist-test: dist
	$(MAKE) dist-test-wheel dist-test-npm

# What `make test` runs of the above: the artifacts for this machine only (one cross-compile
# instead of four), installed and checked as a user would.
artifact-test:
	$(MAKE) dist-test PLATFORMS=$(DIST_OS)/$(DIST_ARCH)

dist-test-wheel:
	@py="$$(bindings/python/find-python.sh)" || { echo "dist-test-wheel: no Python >= 3.12 (the OpenHands SDK needs it; see bindings/python/README.md)"; exit 1; }; \
	  rm -rf $(DIST_VENV) && echo "fresh venv $(DIST_VENV) ($$py)" && "$$py" -m venv $(DIST_VENV)
	@echo "pip install the wheel and the pinned openhands-sdk/openhands-tools/pytest (a few minutes the first time)"
	$(DIST_VENV)/bin/python -m pip install --disable-pip-version-check --progress-bar off -q \
	  $(DIST)/concord_openhands-$(VERSION)-*.whl -r bindings/python/requirements-test.txt
	cd $(DIST)/.test && env -u CONCORD_BIN CONCORD_WHEEL="$$(ls $(DIST)/concord_openhands-$(VERSION)-*.whl)" \
	  LITELLM_LOCAL_MODEL_COST_MAP=True OPENHANDS_SUPPRESS_BANNER=1 \
	  $(DIST_VENV)/bin/python -m pytest -p no:cacheprovider $(CURDIR)/bindings/python/tests/test_wheel_install.py

dist-test-npm:
	$(MAKE) -C bindings/ts build e2e-deps
	cd bindings/ts && env -u CONCORD_BIN CONCORD_NPM_TARBALL="$$(ls $(DIST)/concord-opencode-$(VERSION)-*.tgz)" \
	  node --test --test-reporter=spec --test-concurrency=1 dist/test/e2e/tarball.test.js

# ---------------------------------------------------------------------------------------------
# Claude Code (issue 33): the plugin (bindings/claude-code/.claude-plugin, hooks/hooks.json) with
# the binary for this machine at bin/concord, where hooks.json runs it through ${CLAUDE_PLUGIN_ROOT}.
#   make dist-claude-code   $(CLAUDE_DIST)/claude-code/ (claude --plugin-dir) and
#                           $(CLAUDE_DIST)/claude-code-marketplace/ (claude plugin marketplace add,
#                           then claude plugin install concord@concord); CLAUDE_DIST defaults to dist/
# The end-to-end tests (bindings/claude-code/e2e, in go-test) drive the pinned Claude Code with it.
.PHONY: claude-code-deps dist-claude-code
CLAUDE_DIST ?= $(DIST)
CLAUDE_SRC  := bindings/claude-code
# The plugin's version is the release's.
CLAUDE_VERSION_JS := const fs = require("fs"), f = process.argv[1], p = JSON.parse(fs.readFileSync(f)); \
  p.version = process.argv[2]; fs.writeFileSync(f, JSON.stringify(p, null, 2) + "\n")

claude-code-deps:
	$(MAKE) -C $(CLAUDE_SRC) deps

go-test: claude-code-deps
dist: dist-claude-code

dist-claude-code:
	rm -rf $(CLAUDE_DIST)/claude-code $(CLAUDE_DIST)/claude-code-marketplace
	mkdir -p $(CLAUDE_DIST)/claude-code/bin $(CLAUDE_DIST)/claude-code-marketplace
	cp -R $(CLAUDE_SRC)/.claude-plugin $(CLAUDE_SRC)/hooks LICENSE $(CLAUDE_DIST)/claude-code/
	node -e '$(CLAUDE_VERSION_JS)' $(CLAUDE_DIST)/claude-code/.claude-plugin/plugin.json "$(VERSION)"
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(DIST_LDFLAGS)' -o $(CLAUDE_DIST)/claude-code/bin/concord ./cmd/concord
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w -X main.version=$(VERSION)' -o $(CLAUDE_DIST)/claude-code/bin/concord-hook ./cmd/concord-hook
	cp -R $(CLAUDE_SRC)/marketplace/.claude-plugin $(CLAUDE_DIST)/claude-code-marketplace/
	cp -R $(CLAUDE_DIST)/claude-code $(CLAUDE_DIST)/claude-code-marketplace/concord

# ---------------------------------------------------------------------------------------------
# Gemini CLI (issue 35): the extension (bindings/gemini/extension: gemini-extension.json,
# hooks/hooks.json) with concord and concord-hook for this machine in bin/, where hooks.json runs
# concord-hook through ${extensionPath}.
#   make dist-gemini        $(GEMINI_DIST)/gemini/, which `gemini extensions install` takes;
#                           GEMINI_DIST defaults to dist/
.PHONY: dist-gemini
GEMINI_DIST ?= $(DIST)
dist: dist-gemini

dist-gemini:
	rm -rf $(GEMINI_DIST)/gemini
	mkdir -p $(GEMINI_DIST)/gemini/bin
	cp -R bindings/gemini/extension/gemini-extension.json bindings/gemini/extension/hooks LICENSE $(GEMINI_DIST)/gemini/
	node -e '$(CLAUDE_VERSION_JS)' $(GEMINI_DIST)/gemini/gemini-extension.json "$(VERSION)"
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(DIST_LDFLAGS)' -o $(GEMINI_DIST)/gemini/bin/concord ./cmd/concord
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w -X main.version=$(VERSION)' -o $(GEMINI_DIST)/gemini/bin/concord-hook ./cmd/concord-hook
