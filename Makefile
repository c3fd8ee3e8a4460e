# Portcullis. `make run` starts everything; `make test` runs every test.
SHELL := /usr/bin/env bash
GO    ?= go
TEST_MODULES := test/differential
# test/load is a benchmark (make bench); it is linted but not run by make test.
LINT_MODULES := $(TEST_MODULES) test/load

.PHONY: run test lint bench build db-stop clean

run:
	@scripts/ensure-postgres.sh
	@scripts/run.sh

build:
	$(GO) build -o bin/ ./cmd/gateway ./cmd/admin

test:
	@scripts/ensure-postgres.sh
	$(GO) test -count=1 -timeout 20m ./...
	@for m in $(TEST_MODULES); do \
	  if [ -f $$m/go.mod ]; then echo "== $$m"; (cd $$m && $(GO) test -count=1 -timeout 20m ./...) || exit 1; fi; \
	done

bin/staticcheck: tools/go.mod tools/go.sum
	$(GO) -C tools build -o ../bin/staticcheck honnef.co/go/tools/cmd/staticcheck

lint: bin/staticcheck
	@unformatted=$$(gofmt -l cmd internal migrations hack tools test 2>/dev/null); \
	  if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	bin/staticcheck ./...
	@for m in $(LINT_MODULES); do \
	  if [ -f $$m/go.mod ]; then (cd $$m && $(GO) vet ./... && ../../bin/staticcheck ./...) || exit 1; fi; \
	done

# Benchmarks run on one pinned core and report ratios against a reference
# measured in the same run (see docs/benchmarks.md).
bench:
	@scripts/bench.sh

db-stop:
	@[ -x bin/devpg ] || $(GO) build -o bin/ ./hack/devpg
	bin/devpg stop --dir .portcullis/postgres

clean:
	rm -rf bin
