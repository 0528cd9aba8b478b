# cuzk: `make test` is the project's test command (CI runs it through .ci/run).
GO ?= go
# go-nvml's cgo code calls NVML functions that its bundled nvml.h marks deprecated, so
# the first build of that package prints about 30 compiler warnings (harmless). cgo
# flags cannot be set for a dependency from go.mod: every target here passes this one.
export CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations

.PHONY: build install demo test vet race fuzz gpu-lib gpu-bundle
build:
	$(GO) build -o bin/cuzk ./cmd/cuzk

# cuzk into $(go env GOBIN), or $(go env GOPATH)/bin when GOBIN is unset.
install:
	$(GO) install ./cmd/cuzk

demo:
	$(GO) run ./cmd/cuzk demo

# The packages that only read device information build without cgo (no C toolchain,
# no NVML): CGO_ENABLED=0 checks that none of them comes to need it.
vet:
	$(GO) vet ./...
	CGO_ENABLED=0 $(GO) build ./dashboard/ ./metrics/ ./gpu/devinfo/
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1)

# Needs PostgreSQL on 127.0.0.1:5432 (or CUZK_TEST_DATABASE_URL). Runs vet, every
# package's tests, one line each for the GPU and NVML tests (run, or skipped and
# why), the concurrent packages again under the race detector, and last drops the
# migrated template database the tests clone, so a run leaves no database behind.
test: vet
	$(GO) test -count=1 -timeout 15m ./...
	@$(GO) test -count=1 -v -run '^$$' ./gpu/ | grep -E '^(GPU|NVML) tests:' || true
	$(GO) test -count=1 -race -timeout 10m ./worker/ ./metrics/
	$(GO) test -count=1 -race -timeout 10m -run "Poller|Concurren|Registry|Cores|InLine|OutOfLine" ./gpu/devinfo/ ./synth/
	$(MAKE) fuzz FUZZTIME=5s
	@$(GO) run ./internal/pgtest/droptemplate

# Every fuzz target (func FuzzXxx in a _test.go file) for FUZZTIME each; go test
# fuzzes one target at a time. A new interesting input is minimized for at most 10
# runs, so that the time goes to exploring. A failing input is written under the
# package's testdata/fuzz/: commit it, and plain go test runs it from then on.
FUZZTIME ?= 10s
fuzz:
	@set -e; for f in $$(grep -rl --include='*_test.go' --exclude-dir=.git '^func Fuzz' .); do \
	  for t in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$f); do \
	    echo "fuzz $$t ($$(dirname $$f), $(FUZZTIME))"; \
	    $(GO) test -count=1 -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 10x $$(dirname $$f)/; \
	  done; \
	done

gpu-lib:
	$(MAKE) -C gpu/cuda

# .gpubundle/: what scripts/gpu-e2e.sh needs on a GPU host without Go or PostgreSQL
# (CUZK_PREBUILT_LIB=path adds a CUDA library).
gpu-bundle:
	scripts/gpu-bundle.sh
