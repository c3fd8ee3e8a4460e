// Package migrations holds the database schema as numbered SQL files, applied
// in order by `admin migrate` (goose). Each file runs in one transaction.
//
// Numbering: 00001 foundation, 00002 tenancy, 00003 policy store,
// 00004 decisions, 00005 admin API, 00006 cluster CRDs, 00007 decision
// mutations, 00008 URL credentials, 00009 admin audit actor ids, 00010
// tenant limits, 00011 committed inventory, 00012 the dashboards' read-only
// role, 00013 the web UI's sessions, 00014 decisions keyed by tenant
// (Citus), 00015 decision counts, 00016 the index for dashboards that
// filtered decisions by tenant name goes, 00017 the ranges of tenant
// limits, 00018 the inventory's bounds, 00019 their ranges; later files
// take the next free number.
package migrations

import "embed"

// FS holds every migration file.
//
//go:embed *.sql
var FS embed.FS
