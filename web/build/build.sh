#!/usr/bin/env bash
# Rebuilds web/static/vendor from the exact versions pinned in
# package-lock.json: the CodeMirror bundle (esbuild), htmx and uPlot as
# published, each package's licence, and SHA256SUMS over all of them. The
# output is committed, so that building and running the gateway needs no
# Node; only this script (make web-bundle) does.
set -euo pipefail
cd "$(dirname "$0")"
npm ci --no-audit --no-fund --loglevel=error
out=../static/vendor
rm -rf "$out" && mkdir -p "$out/licenses"
npx esbuild entry.js --bundle --minify --format=iife --global-name=PortcullisCM \
  --outfile="$out/codemirror.js" --legal-comments=none --log-level=warning
cp node_modules/htmx.org/dist/htmx.min.js "$out/htmx.min.js"
cp node_modules/uplot/dist/uPlot.iife.min.js "$out/uPlot.iife.min.js"
cp node_modules/uplot/dist/uPlot.min.css "$out/uPlot.min.css"
# Every package that ends up in a shipped file brings its licence along.
for p in htmx.org uplot codemirror @codemirror/autocomplete @codemirror/commands @codemirror/language \
  @codemirror/lang-yaml @codemirror/lint @codemirror/search @codemirror/state @codemirror/streamparser @codemirror/view \
  @lezer/common @lezer/highlight @lezer/lr @lezer/yaml crelt style-mod w3c-keyname @marijn/find-cluster-break; do
  [ -d "node_modules/$p" ] || continue
  v=$(node -p "require('./node_modules/$p/package.json').version")
  cp "node_modules/$p/LICENSE" "$out/licenses/$(echo "$p" | tr / _)@$v.LICENSE"
done
(cd "$out" && find . -type f ! -name SHA256SUMS | sort | xargs sha256sum > SHA256SUMS)
