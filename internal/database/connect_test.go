package database_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/portcullis-dev/portcullis/internal/database"
	"github.com/portcullis-dev/portcullis/internal/pgtest"
)

func TestOpenPools(t *testing.T) {
	const (
		pg     = "postgres://u@db:5432/p"
		bouncr = "postgres://u@pgbouncer:6432/p"
	)
	tests := []struct {
		name           string
		cfg            database.Config
		wantMode       pgx.QueryExecMode
		wantSplit      bool
		wantDirectMax  int32
		wantErrContain string
	}{
		{name: "one URL", cfg: database.Config{URL: pg}, wantMode: pgx.QueryExecModeCacheStatement},
		{name: "direct URL equal to the pool's", cfg: database.Config{URL: pg, DirectURL: pg}, wantMode: pgx.QueryExecModeCacheStatement},
		{name: "pool through PgBouncer", cfg: database.Config{URL: bouncr, DirectURL: pg},
			wantMode: pgx.QueryExecModeCacheDescribe, wantSplit: true, wantDirectMax: 2},
		{name: "the URL's exec mode wins", cfg: database.Config{URL: bouncr + "?default_query_exec_mode=exec", DirectURL: pg},
			wantMode: pgx.QueryExecModeExec, wantSplit: true, wantDirectMax: 2},
		{name: "the URL's exec mode without a split", cfg: database.Config{URL: pg + "?default_query_exec_mode=describe_exec"},
			wantMode: pgx.QueryExecModeDescribeExec},
		{name: "the direct URL's pool size wins", cfg: database.Config{URL: bouncr, DirectURL: pg + "?pool_max_conns=5"},
			wantMode: pgx.QueryExecModeCacheDescribe, wantSplit: true, wantDirectMax: 5},
		{name: "bad exec mode", cfg: database.Config{URL: bouncr + "?default_query_exec_mode=fast", DirectURL: pg},
			wantErrContain: "--database-url"},
		{name: "bad direct URL", cfg: database.Config{URL: bouncr, DirectURL: "postgres://u@db:notaport/p"},
			wantErrContain: "--database-direct-url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps, err := database.OpenPools(tt.cfg)
			if tt.wantErrContain != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErrContain) {
					t.Fatalf("err = %v, want one naming %s", err, tt.wantErrContain)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer ps.Close()
			if ps.ExecMode != tt.wantMode || ps.Pool.Config().ConnConfig.DefaultQueryExecMode != tt.wantMode {
				t.Errorf("exec mode %v (pool %v), want %v", ps.ExecMode, ps.Pool.Config().ConnConfig.DefaultQueryExecMode, tt.wantMode)
			}
			if tt.cfg.Split() != tt.wantSplit || (ps.Direct != ps.Pool) != tt.wantSplit {
				t.Fatalf("split %t, direct pool apart %t; want %t", tt.cfg.Split(), ps.Direct != ps.Pool, tt.wantSplit)
			}
			if tt.wantSplit {
				if got := ps.Direct.Config().MaxConns; got != tt.wantDirectMax {
					t.Errorf("direct pool MaxConns %d, want %d", got, tt.wantDirectMax)
				}
				// Sessions need their own statements: the direct pool
				// keeps pgx's default.
				if m := ps.Direct.Config().ConnConfig.DefaultQueryExecMode; m != pgx.QueryExecModeCacheStatement {
					t.Errorf("direct pool exec mode %v, want cache statement", m)
				}
			}
		})
	}
}

// The gateway checks the schema through its pool, which may be PgBouncer
// in transaction mode: the check must take no session lock, and so must
// not wait for a migrator holding one.
func TestCheckCurrentTakesNoLock(t *testing.T) {
	ctx := context.Background()
	url := pgtest.EmptyURL(t)
	holder, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(ctx)
	if _, err := holder.Exec(ctx, "SELECT pg_advisory_lock($1)", 0x706f7274); err != nil {
		t.Fatal(err)
	}
	pool, err := database.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	start := time.Now()
	err = database.CheckCurrent(cctx, pool)
	if !errors.Is(err, database.ErrPending) || !strings.Contains(err.Error(), "database at version 0") || time.Since(start) > 2*time.Second {
		t.Fatalf("CheckCurrent while a migrator holds the lock = %v (after %v), want ErrPending at version 0 at once", err, time.Since(start))
	}
	var held int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid <> $1", holder.PgConn().PID()).Scan(&held); err != nil {
		t.Fatal(err)
	}
	if held != 0 {
		t.Fatalf("%d advisory locks held by other sessions after CheckCurrent, want 0", held)
	}
}

func TestWaitCurrent(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	t.Run("pending", func(t *testing.T) {
		pool, err := database.Open(context.Background(), pgtest.EmptyURL(t))
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := database.WaitCurrent(ctx, pool, logger); !errors.Is(err, database.ErrPending) {
			t.Fatalf("WaitCurrent on an empty database = %v, want ErrPending", err)
		}
	})
	t.Run("current", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := database.WaitCurrent(ctx, pgtest.Pool(t), logger); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("unreachable until shutdown", func(t *testing.T) {
		ps, err := database.OpenPools(database.Config{URL: "postgres://postgres@/postgres?host=" + t.TempDir() + "&sslmode=disable"})
		if err != nil {
			t.Fatal(err)
		}
		defer ps.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		err = database.WaitCurrent(ctx, ps.Pool, logger)
		if err == nil || !strings.Contains(err.Error(), "database not reached before shutdown") {
			t.Fatalf("WaitCurrent with no server = %v, want a shutdown error", err)
		}
	})
}
