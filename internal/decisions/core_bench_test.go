package decisions

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
)

// How many decisions one PostgreSQL core stores per second: the recorder
// writes a full queue (default batches, binary COPY) into the server, and
// the CPU time of the server's processes over the run is read from /proc.
// Reports decisions/s (wall), pg-cpu-s (the server's CPU seconds),
// decisions/pg-core-s (decisions per second of one busy server core), and
// the table's size and the WAL written per decision. The
// last holds on a shared machine, where wall time depends on the
// neighbours; scripts/bench-decisions-core.sh pins the server to one core
// and the recorder to another, so that wall time shows the same.
//
// indexes=schema keeps every index the migrations create; indexes=key
// keeps the key alone, to show what the others cost. Decisions come from
// 1,000 tenants with 4 clusters each, so each index is written at many
// places, as in a fleet.
func BenchmarkRecorderPostgresCore(b *testing.B) {
	for _, indexes := range []string{"schema", "key"} {
		b.Run("indexes="+indexes, func(b *testing.B) {
			f := newFixture(b)
			ctx := context.Background()
			if indexes == "key" {
				dropSecondaryIndexes(b, f)
			}
			pg := postgresServer(b, f)
			// Four recorders stand for four gateway replicas: one
			// recorder writes one batch at a time and waits for its
			// commit, which would leave the server idle meanwhile.
			const writers = 4
			rs := make([]*PGRecorder, writers)
			regs := make([]*prometheus.Registry, writers)
			for i := range rs {
				regs[i] = f.reg
				if i > 0 {
					regs[i] = prometheus.NewRegistry()
				}
				rs[i] = f.recorder(b, func(c *RecorderConfig) {
					c.Registerer = regs[i]
					c.QueueSize = b.N/writers + 1
					c.FlushInterval = 200 * time.Millisecond
					c.BatchRows = 0
					c.SpillDir = filepath.Join(f.dir, strconv.Itoa(i))
				})
			}
			ds := benchDecisions(b.N)
			for i, d := range ds {
				d.TenantID = int64(1 + i%1000)
				d.TenantName = fmt.Sprintf("tenant-%d", d.TenantID)
				d.ClusterID = d.TenantID*10 + int64(i/1000%4)
				d.ClusterName = fmt.Sprintf("cluster-%d", i/1000%4)
			}
			// The day's partition exists before the clock starts.
			if err := ensurePartitions(ctx, f.pool, daysOf(ds)); err != nil {
				b.Fatal(err)
			}
			lsn0 := walLSN(b, f)
			b.ResetTimer()
			start, cpu0 := time.Now(), pg.cpu(b)
			for i, d := range ds {
				rs[i%writers].Record(d)
			}
			for _, r := range rs {
				if err := r.Close(ctx); err != nil {
					b.Fatal(err)
				}
			}
			elapsed, cpu := time.Since(start), pg.cpu(b)-cpu0
			b.StopTimer()
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "decisions/s")
			b.ReportMetric(cpu.Seconds(), "pg-cpu-s")
			b.ReportMetric(float64(b.N)/cpu.Seconds(), "decisions/pg-core-s")
			// What a decision costs on disk and in the WAL that replicas
			// and backups carry.
			var disk, wal int64
			err := f.pool.QueryRow(ctx, `SELECT
				(SELECT sum(pg_total_relation_size(inhrelid))::bigint FROM pg_inherits WHERE inhparent = 'decisions'::regclass),
				pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)::bigint`, lsn0).Scan(&disk, &wal)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(disk)/float64(b.N), "disk-B/decision")
			b.ReportMetric(float64(wal)/float64(b.N), "wal-B/decision")
			// Recorder 0 reports to f.reg, which checkAllWritten reads.
			for _, reg := range regs[1:] {
				g := &fixture{reg: reg}
				if n := g.counter(b, "portcullis_decisions_spilled_total") + g.counter(b, "portcullis_decisions_dropped_total"); n != 0 {
					b.Fatalf("%d decisions spilled or dropped", n)
				}
			}
			f.checkAllWritten(b, b.N)
		})
	}
}

// walLSN is the server's current write-ahead log position.
func walLSN(b *testing.B, f *fixture) string {
	b.Helper()
	var lsn string
	if err := f.pool.QueryRow(context.Background(), "SELECT pg_current_wal_lsn()::text").Scan(&lsn); err != nil {
		b.Fatal(err)
	}
	return lsn
}

// dropSecondaryIndexes drops every index of decisions but its key.
func dropSecondaryIndexes(b *testing.B, f *fixture) {
	b.Helper()
	ctx := context.Background()
	rows, err := f.pool.Query(ctx, `SELECT indexrelid::regclass::text FROM pg_index
		WHERE indrelid = 'decisions'::regclass AND NOT indisprimary`)
	if err != nil {
		b.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range names {
		if _, err := f.pool.Exec(ctx, "DROP INDEX "+n); err != nil {
			b.Fatal(err)
		}
	}
}

// pgServer is the PostgreSQL server the fixture's database lives on.
type pgServer struct{ postmaster int }

// postgresServer finds the server's postmaster from its data directory:
// the benchmark must run as a user who can read it (root, or postgres).
func postgresServer(b *testing.B, f *fixture) pgServer {
	b.Helper()
	var dir string
	if err := f.pool.QueryRow(context.Background(), "SHOW data_directory").Scan(&dir); err != nil {
		b.Fatal(err)
	}
	pidFile, err := os.ReadFile(filepath.Join(dir, "postmaster.pid"))
	if err != nil {
		b.Skipf("the server's CPU cannot be read: %v", err)
	}
	pid, err := strconv.Atoi(strings.SplitN(string(pidFile), "\n", 2)[0])
	if err != nil {
		b.Fatalf("postmaster.pid: %v", err)
	}
	return pgServer{postmaster: pid}
}

// cpu is the CPU time the server has used so far: the postmaster's own,
// that of its children that have exited (which the postmaster reaped),
// and that of the children running now.
func (s pgServer) cpu(b *testing.B) time.Duration {
	b.Helper()
	const tick = 10 * time.Millisecond // USER_HZ is 100 on Linux
	own, err := procTimes(s.postmaster)
	if err != nil {
		b.Fatal(err)
	}
	total := own.utime + own.stime + own.cutime + own.cstime
	entries, err := os.ReadDir("/proc")
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == s.postmaster {
			continue
		}
		t, err := procTimes(pid)
		if err != nil || t.ppid != int64(s.postmaster) {
			continue // gone meanwhile, or not the server's
		}
		total += t.utime + t.stime
	}
	return time.Duration(total) * tick
}

type procStat struct{ ppid, utime, stime, cutime, cstime int64 }

// procTimes reads the parent and the CPU times (in ticks) of a process
// from /proc/PID/stat (proc(5)).
func procTimes(pid int) (procStat, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	// The command name may hold spaces and parentheses: the fields start
	// after the last ')'. Field 4 of the line is ppid, 14-17 the times.
	s := string(raw)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 15 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(fields))
	}
	var v [5]int64
	for i, idx := range []int{1, 11, 12, 13, 14} { // fields 4, 14, 15, 16, 17
		if v[i], err = strconv.ParseInt(fields[idx], 10, 64); err != nil {
			return procStat{}, err
		}
	}
	return procStat{ppid: v[0], utime: v[1], stime: v[2], cutime: v[3], cstime: v[4]}, nil
}
