package database_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/portcullis-dev/portcullis/internal/database"
	"github.com/portcullis-dev/portcullis/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestMigrateIsIdempotent(t *testing.T) {
	ctx := context.Background()
	pool, err := database.Open(ctx, pgtest.EmptyURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()

	if err := database.CheckCurrent(ctx, pool); !errors.Is(err, database.ErrPending) {
		t.Fatalf("CheckCurrent on an empty database = %v, want ErrPending", err)
	} else if !strings.Contains(err.Error(), "admin migrate --database-url") {
		t.Fatalf("error %q does not name the command to run", err)
	}
	first, err := database.Migrate(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) == 0 {
		t.Fatal("first Migrate applied nothing")
	}
	second, err := database.Migrate(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(second) != 0 {
		t.Fatalf("second Migrate applied %v, want nothing", second)
	}
	if err := database.CheckCurrent(ctx, pool); err != nil {
		t.Fatalf("CheckCurrent after Migrate: %v", err)
	}
}

// Two migrators started at once must apply every file exactly once.
func TestMigrateConcurrently(t *testing.T) {
	ctx := context.Background()
	url := pgtest.EmptyURL(t)
	const n = 2
	applied := make([][]int64, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		pool, err := database.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			applied[i], errs[i] = database.Migrate(ctx, pool)
		}()
	}
	wg.Wait()
	seen := map[int64]int{}
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("migrator %d: %v", i, errs[i])
		}
		for _, v := range applied[i] {
			seen[v]++
		}
	}
	if len(seen) == 0 {
		t.Fatal("no migration applied")
	}
	for v, c := range seen {
		if c != 1 {
			t.Errorf("version %d applied %d times", v, c)
		}
	}
	pool, _ := database.Open(ctx, url)
	defer pool.Close()
	if err := database.CheckCurrent(ctx, pool); err != nil {
		t.Fatal(err)
	}
}

func TestOpenRejectsBadURL(t *testing.T) {
	_, err := database.Open(context.Background(), "postgres://%zz")
	if err == nil || !strings.Contains(err.Error(), "invalid database URL") {
		t.Fatalf("Open(bad) = %v", err)
	}
}
