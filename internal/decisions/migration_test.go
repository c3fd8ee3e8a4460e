package decisions

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/portcullis-dev/portcullis/migrations"
)

// Down drops the table with its partitions, and Up makes it again.
func TestMigrationDown(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	p := &Partitions{Pool: f.pool, Retention: 48 * time.Hour}
	if err := p.Maintain(ctx); err != nil {
		t.Fatal(err)
	}
	f.insert(t, decision(time.Now()))
	db := stdlib.OpenDBFromPool(f.pool)
	defer db.Close()
	gp, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS, goose.WithLogger(goose.NopLogger()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gp.DownTo(ctx, 3); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := f.pool.QueryRow(ctx, "SELECT count(*) FROM pg_class WHERE relname LIKE 'decisions%'").Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d decisions relations left after Down (%v)", left, err)
	}
	if _, err := gp.Up(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Maintain(ctx); err != nil {
		t.Fatal(err)
	}
}
