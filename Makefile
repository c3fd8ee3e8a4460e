# Portcullis. `make run` starts everything; `make test` runs every test.
SHELL := /usr/bin/env bash
GO    ?= go
TEST_MODULES := test/differential test/chart test/catalog
# test/load is a benchmark (make bench) and the drills (make drills), and
# test/e2e runs a real kube-apiserver (make e2e); both are linted, and make
# test runs only the fast drills.
LINT_MODULES := $(TEST_MODULES) test/load test/e2e
FAST_DRILLS  := ^TestDrill(ColdStart|Revocation)$$

.PHONY: run test test-ui ui-screenshots web-bundle lint bench drills build db-stop clean e2e

run:
	@scripts/ensure-postgres.sh
	@scripts/run.sh

build:
	$(GO) build -o bin/ ./cmd/gateway ./cmd/admin

# The packages with concurrent code (caches, the recorder, the webhook, the
# evaluator's shared snapshots) run under the race detector; the rest run
# once without it. Lint is part of the test: CI runs only `make test`.
RACE_PKGS := evaluator policystore inventory tenancy decisions webhook ui limits
RACE_RE   := /internal/($(subst $(eval) ,|,$(strip $(RACE_PKGS))))(/|$$)

test: lint bin/helm
	@scripts/ensure-postgres.sh
	$(GO) test -count=1 -timeout 20m $$($(GO) list ./... | grep -vE '$(RACE_RE)')
	$(GO) test -race -count=1 -timeout 20m $$($(GO) list ./... | grep -E '$(RACE_RE)')
	@for m in $(TEST_MODULES); do \
	  if [ -f $$m/go.mod ]; then echo "== $$m"; (cd $$m && $(GO) test -count=1 -timeout 20m ./...) || exit 1; fi; \
	done
	@echo "== test/load (fast drills)"
	@scripts/ensure-pgbouncer.sh
	cd test/load && PORTCULLIS_DRILLS=fast $(GO) test -count=1 -timeout 5m -run '$(FAST_DRILLS)' .
	@$(MAKE) --no-print-directory test-ui

# The web UI in a real browser (Debian's chromium, playwright-core and
# axe-core from test/ui's lockfile) against a real gateway and PostgreSQL.
# The test is built only with -tags browser, so plain `go test ./...`
# needs no browser.
test-ui:
	@scripts/ensure-postgres.sh
	@scripts/ensure-browser.sh
	$(GO) test -tags browser -count=1 -timeout 5m -run '^TestBrowserUI$$' ./cmd/gateway

# The browser suite again, saving the screenshots of docs/ui.md.
ui-screenshots:
	@scripts/ensure-postgres.sh
	@scripts/ensure-browser.sh
	SHOTS=$(CURDIR)/docs/ui $(GO) test -tags browser -count=1 -timeout 5m -run '^TestBrowserUI$$' ./cmd/gateway

# Rebuilds web/static/vendor (CodeMirror bundle, htmx, uPlot, licences,
# SHA256SUMS) from web/build's lockfile. The output is committed: building
# and running the gateway needs no Node.
web-bundle:
	web/build/build.sh

# A real kube-apiserver, configured only with what `admin cluster create`
# writes, as the gateway's client (docs/development.md). The first run
# builds kube-apiserver into the user's cache directory.
e2e:
	@scripts/ensure-postgres.sh
	cd test/e2e && $(GO) test -count=1 -timeout 60m -v ./...

bin/staticcheck: tools/go.mod tools/go.sum
	$(GO) -C tools build -o ../bin/staticcheck honnef.co/go/tools/cmd/staticcheck

# helm, pinned in tools/go.mod, for the chart's tests (test/chart).
bin/helm: tools/go.mod tools/go.sum
	$(GO) -C tools build -o ../bin/helm helm.sh/helm/v3/cmd/helm

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

# Production drills: two replicas, Postgres and HAProxy under load; each
# prints its figure (docs/production.md, "Drills"). About 5 minutes, as root.
drills:
	@scripts/drills.sh

db-stop:
	@[ -x bin/devpg ] || $(GO) build -o bin/ ./hack/devpg
	bin/devpg stop --dir .portcullis/postgres

clean:
	rm -rf bin
