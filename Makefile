# moat: a sandbox runtime with its own user-space kernel.
#
#   make demo     run a real program inside a moat sandbox (installs what it needs)
#   make test     everything CI runs: formatting, vet, unit, conformance and
#                 integration tests (as root: they run real bundles in moat and runc)
#   make build    bin/moat, bin/moat-bench, bin/moat-conformance
#   make bench    compare moat with runc and gVisor; writes docs/benchmarks.*
#   make conformance RUNTIME=runc|runsc|moat|PATH
#                 run the conformance suite in a runtime; writes docs/conformance-RUNTIME.{txt,json}
#                 and regenerates docs/conformance.md from the reports
#   make docs     regenerate docs/syscalls.md from the syscall table and
#                 docs/conformance.md from the conformance reports

GO ?= go
# The sentry forks its stub processes raw; it must not link the C library
# (see platform/systrap/cgo.go). Everything is built the same way.
export CGO_ENABLED := 0

BIN := bin
BUILD := build
RUNTIME ?= moat

# Debian packages the tests and the demo use: gcc and libc6-dev build the
# static conformance programs and workloads, binutils assembles the stub,
# busybox-static fills test root file systems, runc is the reference.
DEB_PACKAGES := gcc libc6-dev binutils busybox-static runc

.PHONY: all build deps test demo conformance docs clean

all: build

build:
	$(GO) build -o $(BIN)/moat ./cmd/moat
	$(GO) build -o $(BIN)/moat-bench ./cmd/moat-bench
	$(GO) build -o $(BIN)/moat-conformance ./cmd/moat-conformance

# deps installs what is missing, quietly when nothing is.
deps:
	@missing=; for p in $(DEB_PACKAGES); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "apt-get install$$missing"; \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing >/dev/null || \
		{ apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing >/dev/null; }; \
	fi
	@$(GO) mod download

# Packages are tested one at a time (-p 1): the conformance and integration
# packages each keep the two CPUs of a CI machine busy, and run together each
# would time the other's load.
test: deps build
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	MOAT_BINARY=$(abspath $(BIN)/moat) $(GO) test -count=1 -p 1 -timeout 20m ./...

demo: deps build
	@./demo/demo.sh $(abspath $(BIN)/moat) $(abspath $(BUILD))/demo

# conformance runs the suite natively and in RUNTIME (moat, runc, runsc or a
# path), writes docs/conformance-RUNTIME.{txt,json}, and regenerates
# docs/conformance.md from the reports. runsc is current
# gVisor on its default platform, systrap, built by bench-deps; its flags
# are internal/ocirun's.
RUNTIME ?= moat
CONFORMANCE_FLAGS_runsc := --runsc $(abspath $(BIN))/runsc
conformance: deps build $(if $(filter runsc,$(RUNTIME)),bench-deps)
	@mkdir -p docs
	$(BIN)/moat-conformance --runtime $(if $(filter moat,$(RUNTIME)),$(abspath $(BIN)/moat),$(RUNTIME)) \
		$(CONFORMANCE_FLAGS_$(RUNTIME)) \
		--json docs/conformance-$(notdir $(RUNTIME)).json | tee docs/conformance-$(notdir $(RUNTIME)).txt
	$(GO) test ./conformance -run ConformanceDoc -update

# rootfs-debian builds, once, the Debian rootfs (python3, gcc, make, git) in
# which the integration tests run real programs; they build it on first use
# too. It needs root and apt's mirror, and is cached under $(BUILD).
.PHONY: rootfs-debian
rootfs-debian:
	$(GO) run ./internal/rootfs/mkdebian $(abspath $(BUILD))/rootfs-debian

docs:
	$(GO) test ./syscalls -run SyscallDoc -update
	$(GO) test ./conformance -run ConformanceDoc -update

clean:
	rm -rf $(BIN) $(BUILD)

include bench/Makefile.inc
# moat itself is one of the runtimes bench compares.
bench: build
