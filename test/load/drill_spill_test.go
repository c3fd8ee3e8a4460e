package load

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/portcullis-dev/portcullis/internal/decisions"
)

// drillSpillBytes is the size of the tmpfs that replica b spills to in
// drill 7: a few hundred decisions.
const drillSpillBytes = "512k"

// Drill 7: replica b's state directory is a tiny tmpfs holding a corrupt
// spill file left by an earlier process; then the database goes away and
// the spill fills the disk.
func (d *drillCluster) spillFull(t *testing.T) {
	d.ensureUp(t)
	mnt := filepath.Join(d.f.dir, "state-b-tmpfs")
	if err := os.MkdirAll(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	d.b.stop(t)
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+drillSpillBytes, "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("mount a tmpfs (needs root): %v: %s", err, out)
	}
	oldDir := d.b.stateDir
	t.Cleanup(func() {
		select {
		case <-d.b.p.done:
		default:
			d.b.stop(t)
		}
		_ = exec.Command("umount", mnt).Run()
		d.b.stateDir = oldDir
	})
	d.b.stateDir = mnt
	good := corruptSpill(t, d, filepath.Join(mnt, "decisions"))

	d.b.start(t)
	d.b.waitReady(t)
	d.lb.waitUp(t, d.b)
	testutil := func() bool { return len(storedDecisions(t, d.f, drillPrefix+"7c-")) == good }
	deadline := time.Now().Add(30 * time.Second)
	for !testutil() && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	corruptStored := len(storedDecisions(t, d.f, drillPrefix+"7c-"))
	corruptDropped := d.b.metric("portcullis_decisions_dropped_total")
	d.warm(t)

	before := d.served()
	l := startLoad(t, d.f, d.url(), drillPrefix+"7", d.rate, d.items)
	time.Sleep(2 * time.Second)
	stopPG(t, d.f)
	time.Sleep(10 * time.Second)
	fullDropped := d.b.metric("portcullis_decisions_dropped_total") - corruptDropped
	spillBytes := d.b.metric("portcullis_decisions_spill_bytes")
	startPG(t, d.f)
	time.Sleep(3 * time.Second)
	res := l.finish()
	split := d.share(t, before)
	stored := settle(t, d.f, drillPrefix+"7-", d.a, d.b)
	acc := account(res, stored)
	spilled, replayed := d.b.metric("portcullis_decisions_spilled_total"), d.b.metric("portcullis_decisions_replayed_total")
	dropped := d.b.metric("portcullis_decisions_dropped_total")
	log, _ := os.ReadFile(serverLog(d.b.name))
	unreadable := strings.Contains(string(log), "unreadable lines in a spill file")
	lostLogged := strings.Contains(string(log), "could not be written to the database nor to the spill file")
	d.figure("drill 7, spill to a %s tmpfs and a corrupt spill file, at %d req/s: %s (%s); corrupt file: %d of %d good lines replayed, %.0f bad lines counted dropped (logged: %t); "+
		"disk full: %.0f decisions dropped (logged: %t) with %.0f KB spilled; afterwards spilled %.0f, replayed %.0f (%d of them the corrupt file's), dropped %.0f in all; %s",
		drillSpillBytes, d.rate, res, split, corruptStored, good, corruptDropped, unreadable,
		fullDropped, lostLogged, spillBytes/1024, spilled, replayed, good, dropped, acc)
	res.reportFailures(t, 10)
	if len(res.failed) > 0 {
		t.Errorf("%d failed admissions while the spill disk was full; want 0", len(res.failed))
	}
	if corruptStored != good || corruptDropped != 2 || !unreadable {
		t.Errorf("corrupt spill file: %d of %d good lines stored, %.0f dropped (want 2), logged %t", corruptStored, good, corruptDropped, unreadable)
	}
	if fullDropped <= 0 || !lostLogged {
		t.Errorf("the spill disk never filled (dropped %.0f, logged %t): make the tmpfs smaller or the outage longer", fullDropped, lostLogged)
	}
	// Whatever reached the spill file is stored: the only answered
	// decisions missing are the ones counted dropped for the full disk.
	if replayed != spilled+float64(good) {
		t.Errorf("replica b spilled %.0f and replayed %.0f (%d from the corrupt file): spilled decisions were lost", spilled, replayed, good)
	}
	if float64(acc.answeredLost) != dropped-corruptDropped || acc.duplicated > 0 {
		t.Errorf("%d answered decisions not stored, %.0f counted dropped for the full disk; %d duplicated", acc.answeredLost, dropped-corruptDropped, acc.duplicated)
	}
}

// corruptSpill writes a spill file as an earlier process of replica b
// could have left it: decisions, a damaged line and a line torn by a
// crash. It returns the number of good lines.
func corruptSpill(t *testing.T, d *drillCluster, dir string) int {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	const good = 3
	for i := range good {
		line, err := json.Marshal(&decisions.Decision{
			ID: uuid.Must(uuid.NewV7()).String(), Time: time.Now().UTC(), Instance: d.b.name,
			TenantID: d.f.tenants[0].id, TenantName: d.f.tenants[0].name, UID: fmt.Sprintf("%s7c-%d", drillPrefix, i),
			Operation: "CREATE", Version: "v1", Resource: "pods", Kind: "Pod", Namespace: "shop", Name: "spilled",
			Verdict: decisions.VerdictAllowed, HTTPStatus: 200,
		})
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
		if i == 0 {
			b.WriteString("\x00\x00{not json at all\n")
		}
	}
	b.WriteString(`{"ID":"0190e0a0-torn-by-a-cra`)
	name := fmt.Sprintf("spill-%020d-1-1.jsonl", time.Now().Add(-time.Hour).UnixNano())
	if err := os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return good
}
