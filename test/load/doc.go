// Package load holds two things that run real processes. The webhook load
// test of issue 12: the gateway against a trivial Go webhook, each on one
// pinned core, driven by a fixed-rate (open-loop) vegeta client over HTTPS,
// HTTP/2 on one connection, with a bearer token. It is a benchmark, not a
// test: TestWebhookLoad skips unless PORTCULLIS_LOAD=1. Run it with
// scripts/bench-load.sh (make bench).
//
// And the production drills of issue 23 (drills_test.go and drill_*):
// two gateway replicas on one PostgreSQL (their pool through PgBouncer in
// transaction mode, their LISTEN connection direct) behind HAProxy under
// open-loop load, through restarts, kill -9, a database outage, a full
// spill disk. They skip unless PORTCULLIS_DRILLS=1 (=fast runs the two
// that need neither HAProxy nor load); run them with scripts/drills.sh (make drills).
// See docs/production.md, "Drills".
package load
