// Package load is the webhook load test of issue 12: the gateway against a
// trivial Go webhook, each on one pinned core, driven by a fixed-rate
// (open-loop) vegeta client over HTTPS, HTTP/2 on one connection, with a
// bearer token. It is a benchmark, not a test: TestWebhookLoad skips unless
// PORTCULLIS_LOAD=1. Run it with scripts/bench-load.sh (make bench).
package load
