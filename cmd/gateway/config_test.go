package main

import (
	"strings"
	"testing"
	"time"
)

func TestParseConfig(t *testing.T) {
	const db = "postgres://u@localhost/p"
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		check   func(t *testing.T, c Config)
		wantErr string
	}{
		{name: "dev defaults", args: []string{"--dev", "--database-url", db}, check: func(t *testing.T, c Config) {
			if c.WebhookAddr != ":8443" || c.AdminAddr != ":9443" || c.MetricsAddr != ":9090" || c.StateDir != ".portcullis" || c.ShutdownTimeout != 30*time.Second {
				t.Fatalf("defaults: %+v", c)
			}
		}},
		{name: "environment", env: map[string]string{"PORTCULLIS_DEV": "true", "PORTCULLIS_DATABASE_URL": db, "PORTCULLIS_WEBHOOK_ADDR": "127.0.0.1:1"}, check: func(t *testing.T, c Config) {
			if !c.Dev || c.DatabaseURL != db || c.WebhookAddr != "127.0.0.1:1" {
				t.Fatalf("from env: %+v", c)
			}
		}},
		{name: "certificate files", args: []string{"--tls-cert", "c.pem", "--tls-key", "k.pem", "--database-url", db}, check: func(t *testing.T, c Config) {
			if c.TLSCert != "c.pem" || c.Dev {
				t.Fatalf("%+v", c)
			}
		}},
		{name: "decision defaults", args: []string{"--dev", "--database-url", db}, check: func(t *testing.T, c Config) {
			if c.DecisionRetention != 720*time.Hour || c.DecisionBatchRows != 1000 || c.DecisionQueueSize != 10_000 || c.DecisionLog || !c.DecisionStore {
				t.Fatalf("decision defaults: %+v", c)
			}
		}},
		{name: "decision settings from the environment", env: map[string]string{"PORTCULLIS_DEV": "true", "PORTCULLIS_DATABASE_URL": db,
			"PORTCULLIS_DECISION_RETENTION": "168h", "PORTCULLIS_DECISION_BATCH_ROWS": "500", "PORTCULLIS_DECISION_QUEUE_SIZE": "42", "PORTCULLIS_DECISION_LOG": "true"},
			check: func(t *testing.T, c Config) {
				if c.DecisionRetention != 168*time.Hour || c.DecisionBatchRows != 500 || c.DecisionQueueSize != 42 || !c.DecisionLog {
					t.Fatalf("decision settings: %+v", c)
				}
			}},
		{name: "provisional namespace TTL", args: []string{"--dev", "--database-url", db}, env: map[string]string{"PORTCULLIS_PROVISIONAL_NAMESPACE_TTL": "2h"},
			check: func(t *testing.T, c Config) {
				if c.ProvisionalNamespaceTTL != 2*time.Hour {
					t.Fatalf("ProvisionalNamespaceTTL %v", c.ProvisionalNamespaceTTL)
				}
			}},
		{name: "provisional namespace TTL default", args: []string{"--dev", "--database-url", db}, check: func(t *testing.T, c Config) {
			if c.ProvisionalNamespaceTTL != 24*time.Hour {
				t.Fatalf("ProvisionalNamespaceTTL %v", c.ProvisionalNamespaceTTL)
			}
		}},
		{name: "provisional namespace TTL too short", args: []string{"--dev", "--database-url", db, "--provisional-namespace-ttl", "10s"}, wantErr: "--provisional-namespace-ttl must be at least 1m"},
		{name: "inventory bounds default", args: []string{"--dev", "--database-url", db}, check: func(t *testing.T, c Config) {
			if c.MaxNamespacesPerCluster != 10_000 || c.MaxCRDsPerCluster != 1_000 {
				t.Fatalf("inventory bounds %d %d", c.MaxNamespacesPerCluster, c.MaxCRDsPerCluster)
			}
		}},
		{name: "inventory bounds from flag and environment", args: []string{"--dev", "--database-url", db, "--max-namespaces-per-cluster", "2500"},
			env: map[string]string{"PORTCULLIS_MAX_CRDS_PER_CLUSTER": "300"}, check: func(t *testing.T, c Config) {
				if c.MaxNamespacesPerCluster != 2500 || c.MaxCRDsPerCluster != 300 {
					t.Fatalf("inventory bounds %d %d", c.MaxNamespacesPerCluster, c.MaxCRDsPerCluster)
				}
			}},
		{name: "no namespaces", args: []string{"--dev", "--database-url", db, "--max-namespaces-per-cluster", "0"}, wantErr: "--max-namespaces-per-cluster must be between 1 and 1000000"},
		{name: "more namespaces than an override may allow", args: []string{"--dev", "--database-url", db, "--max-namespaces-per-cluster", "1000001"}, wantErr: "--max-namespaces-per-cluster must be between 1 and 1000000"},
		{name: "negative CRDs", env: map[string]string{"PORTCULLIS_DEV": "true", "PORTCULLIS_DATABASE_URL": db, "PORTCULLIS_MAX_CRDS_PER_CLUSTER": "-1"}, wantErr: "--max-crds-per-cluster must be between 1 and 100000"},
		{name: "low-priority lane defaults", args: []string{"--dev", "--database-url", db}, check: func(t *testing.T, c Config) {
			if c.LowPriorityCost != 100_000 || c.LowPriorityWorkers != 0 {
				t.Fatalf("lane %v %d", c.LowPriorityCost, c.LowPriorityWorkers)
			}
		}},
		{name: "low-priority lane off", args: []string{"--dev", "--database-url", db}, env: map[string]string{"PORTCULLIS_LOW_PRIORITY_COST": "0", "PORTCULLIS_LOW_PRIORITY_WORKERS": "3"},
			check: func(t *testing.T, c Config) {
				if c.LowPriorityCost != 0 || c.LowPriorityWorkers != 3 {
					t.Fatalf("lane %v %d", c.LowPriorityCost, c.LowPriorityWorkers)
				}
			}},
		{name: "negative lane threshold", args: []string{"--dev", "--database-url", db, "--low-priority-cost", "-1"}, wantErr: "--low-priority-cost must not be negative"},
		{name: "negative lane workers", args: []string{"--dev", "--database-url", db, "--low-priority-workers", "-1"}, wantErr: "--low-priority-workers must not be negative"},
		{name: "tenants of a deployment of their own", args: []string{"--dev", "--database-url", db, "--tenants", "noisy, big-one"}, check: func(t *testing.T, c Config) {
			serves, err := c.serves()
			if err != nil || serves == nil || !serves("noisy") || !serves("big-one") || serves("quiet") || serves("") {
				t.Fatalf("--tenants noisy,big-one: %v", err)
			}
		}},
		{name: "tenants excluded", args: []string{"--dev", "--database-url", db}, env: map[string]string{"PORTCULLIS_EXCLUDE_TENANTS": "noisy"}, check: func(t *testing.T, c Config) {
			serves, err := c.serves()
			if err != nil || serves == nil || serves("noisy") || !serves("quiet") {
				t.Fatalf("--exclude-tenants noisy: %v", err)
			}
		}},
		{name: "every tenant by default", args: []string{"--dev", "--database-url", db}, check: func(t *testing.T, c Config) {
			if serves, err := c.serves(); err != nil || serves != nil {
				t.Fatalf("no filter expected: %v", err)
			}
		}},
		{name: "tenants and excluded tenants", args: []string{"--dev", "--database-url", db, "--tenants", "a", "--exclude-tenants", "b"}, wantErr: "--tenants and --exclude-tenants exclude each other"},
		{name: "tenant name invalid", args: []string{"--dev", "--database-url", db, "--tenants", "ok,Not_A_Name"}, wantErr: `--tenants: "Not_A_Name" is not a tenant name`},
		{name: "tenant list empty", args: []string{"--dev", "--database-url", db, "--exclude-tenants", " , "}, wantErr: "--exclude-tenants names no tenant"},
		{name: "retention under a day", args: []string{"--dev", "--database-url", db, "--decision-retention", "1h"}, wantErr: "--decision-retention must be at least 24h"},
		{name: "zero batch", args: []string{"--dev", "--database-url", db, "--decision-batch-rows", "0"}, wantErr: "--decision-batch-rows must be at least 1"},
		{name: "zero queue", args: []string{"--dev", "--database-url", db, "--decision-queue-size", "0"}, wantErr: "--decision-queue-size must be at least 1"},
		{name: "no tls and no dev", args: []string{"--database-url", db}, wantErr: "--tls-cert and --tls-key are required (or --dev"},
		{name: "cert without key", args: []string{"--tls-cert", "c.pem", "--database-url", db}, wantErr: "must be set together"},
		{name: "no database", args: []string{"--dev"}, wantErr: "--database-url (PORTCULLIS_DATABASE_URL) is required"},
		{name: "database not a URL", args: []string{"--dev", "--database-url", "host=x"}, wantErr: "postgres:// URL"},
		{name: "direct database URL from env", env: map[string]string{"PORTCULLIS_DEV": "true", "PORTCULLIS_DATABASE_URL": "postgres://u@pgbouncer:6432/p",
			"PORTCULLIS_DATABASE_DIRECT_URL": db}, check: func(t *testing.T, c Config) {
			if c.DatabaseURL != "postgres://u@pgbouncer:6432/p" || c.DatabaseDirectURL != db {
				t.Fatalf("database URLs: %q, %q", c.DatabaseURL, c.DatabaseDirectURL)
			}
		}},
		{name: "no direct database URL", args: []string{"--dev", "--database-url", db}, check: func(t *testing.T, c Config) {
			if c.DatabaseDirectURL != "" {
				t.Fatalf("DatabaseDirectURL %q, want empty (the pool serves both)", c.DatabaseDirectURL)
			}
		}},
		{name: "direct database not a URL", args: []string{"--dev", "--database-url", db, "--database-direct-url", "host=x"}, wantErr: "--database-direct-url must be a postgres:// URL"},
		{name: "bad address", args: []string{"--dev", "--database-url", db, "--webhook-addr", "8443"}, wantErr: `--webhook-addr "8443" is not a host:port`},
		{name: "bad duration", args: []string{"--dev", "--database-url", db, "--shutdown-timeout", "later"}, wantErr: "invalid value"},
		{name: "zero shutdown", args: []string{"--dev", "--database-url", db, "--shutdown-timeout", "0s"}, wantErr: "--shutdown-timeout must be positive"},
		{name: "bad log level", args: []string{"--dev", "--database-url", db, "--log-level", "loud"}, wantErr: `--log-level "loud"`},
		{name: "unknown flag", args: []string{"--webhook-adr", ":1"}, wantErr: "flag provided but not defined: -webhook-adr"},
		{name: "stray argument", args: []string{"--dev", "--database-url", db, "serve"}, wantErr: `unexpected argument "serve"`},
		{name: "otlp endpoint from env", env: map[string]string{"PORTCULLIS_DEV": "true", "PORTCULLIS_DATABASE_URL": db, "PORTCULLIS_OTLP_ENDPOINT": "http://otel-collector:4318"}, check: func(t *testing.T, c Config) {
			if c.OTLPEndpoint != "http://otel-collector:4318" {
				t.Fatalf("OTLPEndpoint %q", c.OTLPEndpoint)
			}
		}},
		{name: "otlp endpoint without scheme", args: []string{"--dev", "--database-url", db, "--otlp-endpoint", "otel-collector:4318"}, wantErr: `--otlp-endpoint "otel-collector:4318": want an http:// or https:// URL`},
		{name: "bad env bool", env: map[string]string{"PORTCULLIS_DEV": "yes please"}, wantErr: "PORTCULLIS_DEV"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseConfig(tt.args, func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "\n") {
					t.Fatalf("error spans several lines: %q", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, c)
		})
	}
}
