package load

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/portcullis-dev/portcullis/internal/policystore"
	"github.com/portcullis-dev/portcullis/internal/testutil"
)

// drillCluster is the drills' stand-in for a production install: two
// gateway replicas on one PostgreSQL behind HAProxy.
type drillCluster struct {
	f       *fixture
	a, b    *replica
	lb      *haproxy
	items   []item
	rate    int
	outage  time.Duration
	probe   []byte // drill 4's probe review: allowed before, denied after
	figures []string
}

func newDrillCluster(t *testing.T) *drillCluster {
	t.Helper()
	d := &drillCluster{items: buildCorpus(t), rate: envInt(t, envDrillRate, 500),
		outage: time.Duration(envInt(t, envDrillOutage, 60)) * time.Second}
	d.f = newFixture(t)
	d.f.bouncer = startPgBouncer(t, d.f.pg.SocketDir)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Several tenants and clusters, one client (apiserver) each.
	d.f.tenants = append(d.f.tenants,
		d.f.onboard(ctx, t, d.f.pool, "drill-east", "east-1", "east-2"),
		d.f.onboard(ctx, t, d.f.pool, "drill-west", "west-1"))
	// Drill 4's policy, without its binding: the binding is the change.
	if _, err := policystore.New(d.f.pool).Apply(ctx, d.f.tenants[0].id, "drills", []byte(probePolicy)); err != nil {
		t.Fatal(err)
	}
	d.probe = probeReview(t, d.items)
	bin := gatewayBinary(t)
	d.a, d.b = newReplica(t, d.f, bin, "drill-a"), newReplica(t, d.f, bin, "drill-b")
	for _, r := range []*replica{d.a, d.b} {
		r.start(t)
		r.waitReady(t)
	}
	d.lb = startHAProxy(t, d.f, d.a, d.b)
	return d
}

func (d *drillCluster) url() string { return "https://" + d.lb.addr }

// figure prints a drill's figure and keeps it for the summary.
func (d *drillCluster) figure(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	fmt.Println(s)
	d.figures = append(d.figures, s)
}

// warm sends one request of each client to each replica directly, so that
// both hold every tenant's policies and namespaces before the database
// goes away (a replica never asked for a tenant has nothing to serve it
// from then: it answers 503, by design).
func (d *drillCluster) warm(t *testing.T) {
	t.Helper()
	it := d.items[0]
	for _, r := range []*replica{d.a, d.b} {
		for _, ten := range d.f.tenants {
			for _, c := range ten.creds {
				uid := fmt.Sprintf("warm-%s-%s-%d", r.name, c.cluster, time.Now().UnixNano())
				cl := newDrillClient(d.f, ten.name, c.token)
				if _, problem := cl.review(r.webhookURL(ten.name), withUID(it, uid), uid, it.allowed); problem != "" {
					t.Fatalf("warming %s for %s/%s: %s", r.name, ten.name, c.cluster, problem)
				}
			}
		}
	}
}

// ensureUp restarts a replica a failed drill left stopped.
func (d *drillCluster) ensureUp(t *testing.T) {
	t.Helper()
	if !d.f.pg.Running(context.Background()) && !pgUp(d.f) {
		if err := d.f.pg.StartChild(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range []*replica{d.a, d.b} {
		select {
		case <-r.p.done:
			r.start(t)
		default:
		}
		r.waitReady(t)
		d.lb.waitUp(t, r)
	}
}

func pgUp(f *fixture) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return f.pool.Ping(ctx) == nil
}

// served is how many webhook requests each replica has answered so far.
func (d *drillCluster) served() [2]float64 {
	return [2]float64{d.a.metric("portcullis_webhook_requests_total"), d.b.metric("portcullis_webhook_requests_total")}
}

// share says how the requests since before were split between the
// replicas, neither restarted since; it fails t if one served none.
func (d *drillCluster) share(t *testing.T, before [2]float64) string {
	t.Helper()
	now := d.served()
	if now[0] <= before[0] || now[1] <= before[1] {
		t.Errorf("the load did not reach both replicas: %v then %v", before, now)
	}
	return fmt.Sprintf("%s answered %.0f, %s %.0f", d.a.name, now[0]-before[0], d.b.name, now[1]-before[1])
}

// TestDrills runs the production drills of issue 23 against real
// processes (see scripts/drills.sh). Each prints its figure.
func TestDrills(t *testing.T) {
	drillsEnabled(t, false)
	d := newDrillCluster(t)
	t.Run("rolling-restart", d.rollingRestart)
	t.Run("kill-9", d.kill9)
	t.Run("postgres-outage", d.postgresOutage)
	t.Run("spill-full-and-corrupt", d.spillFull)
	xacts := d.f.bouncer.transactions()
	d.figure("the replicas' pool went through PgBouncer in transaction mode (%d transactions), their LISTEN connections direct", xacts)
	if xacts <= 0 {
		t.Errorf("PgBouncer passed %d transactions: the replicas' pool did not go through it", xacts)
	}
	fmt.Println("\n== drill figures")
	for _, s := range d.figures {
		fmt.Println(s)
	}
}

// Drill 1: SIGTERM one replica under load, wait for it to exit, start it
// again, wait until HAProxy sends it traffic, then the other.
func (d *drillCluster) rollingRestart(t *testing.T) {
	d.ensureUp(t)
	l := startLoad(t, d.f, d.url(), drillPrefix+"1", d.rate, d.items)
	time.Sleep(3 * time.Second)
	var steps []string
	for _, r := range []*replica{d.a, d.b} {
		stopped := r.stop(t)
		r.start(t)
		ready := r.waitReady(t)
		up := d.lb.waitUp(t, r)
		steps = append(steps, fmt.Sprintf("%s exited %.1fs after SIGTERM, ready %.1fs after start, in HAProxy %.1fs later",
			r.name, stopped.Seconds(), ready.Seconds(), up.Seconds()))
		time.Sleep(2 * time.Second)
	}
	time.Sleep(time.Second)
	res := l.finish()
	acc := account(res, settle(t, d.f, drillPrefix+"1-", d.a, d.b))
	d.figure("drill 1, rolling restart at %d req/s: %s; %s (%s)", d.rate, res, acc, strings.Join(steps, "; "))
	res.reportFailures(t, 10)
	if len(res.failed) > 0 || acc.answeredLost > 0 || acc.duplicated > 0 {
		t.Errorf("rolling restart: %d failed admissions, %d lost decisions (%v), %d duplicated; want 0",
			len(res.failed), acc.answeredLost, acc.lostUIDs, acc.duplicated)
	}
}

// Drill 2: kill -9 a replica under load while the database is away, so
// that it dies with decisions spilled; then the database returns and the
// replica starts again and replays them.
func (d *drillCluster) kill9(t *testing.T) {
	d.ensureUp(t)
	d.warm(t)
	l := startLoad(t, d.f, d.url(), drillPrefix+"2", d.rate, d.items)
	time.Sleep(2 * time.Second)
	stopPG(t, d.f)
	stopped := time.Now()
	// The replica must die with decisions spilled. Through PgBouncer a
	// write in flight when the database goes waits for a server
	// connection until the recorder's write timeout (5s) gives up; direct,
	// it fails at once.
	testutil.Eventually(t, 20*time.Second, d.a.name+" spilling", func() bool {
		return d.a.metric("portcullis_decisions_spilled_total") > 0
	})
	spilling := time.Since(stopped)
	time.Sleep(time.Second)
	spilledA := d.a.metric("portcullis_decisions_spilled_total")
	killed := time.Now()
	d.a.kill(t)
	gone := time.Now() // reaped: its sockets are closed
	time.Sleep(time.Second)
	startPG(t, d.f)
	d.a.start(t)
	d.a.waitReady(t)
	d.lb.waitUp(t, d.a)
	time.Sleep(3 * time.Second)
	res := l.finish()
	acc := account(res, settle(t, d.f, drillPrefix+"2-", d.a, d.b))
	replayedA := d.a.metric("portcullis_decisions_replayed_total")
	// A client learns that its connection died when its first request on
	// it fails; requests it sent before that were on the dead connection
	// (in flight, as far as an apiserver can tell), and so may be those
	// sent before the process was gone (a connection HAProxy made to it
	// while it was being torn down). One sent after both must not fail:
	// HAProxy sends new connections elsewhere.
	seen := map[int]time.Time{}
	for _, o := range res.failed {
		if s, ok := seen[o.client]; !ok || o.end.Before(s) {
			seen[o.client] = o.end
		}
	}
	inFlight, late := 0, 0
	var first, last time.Duration
	for i, o := range res.failed {
		if o.start.After(seen[o.client]) && o.start.After(gone) {
			late++
			t.Logf("sent after its client saw the close and the process was gone: %s, sent %+.1f ms from the kill, %+.1f ms from the close: %s",
				o.uid, o.start.Sub(killed).Seconds()*1000, o.start.Sub(seen[o.client]).Seconds()*1000, o.problem)
		}
		if off := o.start.Sub(killed); i == 0 || off < first {
			first = off
		}
		if off := o.start.Sub(killed); i == 0 || off > last {
			last = off
		}
	}
	for _, o := range res.outcomes {
		if o.start.Before(killed) && o.end.After(killed) {
			inFlight++
		}
	}
	d.figure("drill 2, kill -9 at %d req/s: %s; %d requests in flight (both replicas) at the instant of the kill; %d failed, on %d of %d connections, sent from %+.0f to %+.0f ms of the kill (the process was gone %.0f ms after it), %d after both it was gone and their client saw its connection close; "+
		"the killed replica began spilling %.1fs after the database stopped, had spilled %.0f decisions before the kill and replayed %.0f after its restart; %s (answered but not stored: in its memory queue at the kill, lost by design)",
		d.rate, res, inFlight, len(res.failed), len(seen), len(l.clients), first.Seconds()*1000, last.Seconds()*1000, gone.Sub(killed).Seconds()*1000, late, spilling.Seconds(), spilledA, replayedA, acc)
	res.reportFailures(t, 10)
	switch {
	case late > 0:
		t.Errorf("%d requests failed that were sent after the killed replica was gone and their client saw its connection close: only those in flight may", late)
	case acc.duplicated > 0:
		t.Errorf("%d decisions stored twice", acc.duplicated)
	case replayedA <= 0:
		t.Errorf("the restarted replica replayed nothing (had spilled %.0f)", spilledA)
	case acc.answeredLost > d.rate/2:
		// The queue is written (or spilled) every 200ms: at most that
		// share of the rate may be lost with the process.
		t.Errorf("%d answered decisions lost, more than 200ms of the killed replica's share", acc.answeredLost)
	}
}

func stopPG(t *testing.T, f *fixture) {
	t.Helper()
	if err := f.pg.Stop(context.Background()); err != nil {
		t.Fatalf("stop postgres: %v", err)
	}
}

func startPG(t *testing.T, f *fixture) {
	t.Helper()
	if err := f.pg.StartChild(context.Background()); err != nil {
		t.Fatalf("start postgres: %v", err)
	}
}

// Drill 3: the database goes away for a minute under load; drill 4: a
// policy change is applied the moment it returns.
func (d *drillCluster) postgresOutage(t *testing.T) {
	d.ensureUp(t)
	d.warm(t)
	rs := []*replica{d.a, d.b}
	before := d.served()
	l := startLoad(t, d.f, d.url(), drillPrefix+"3", d.rate, d.items)
	time.Sleep(3 * time.Second)
	stale0 := map[string]float64{}
	for _, r := range rs {
		stale0[r.name] = r.metric("portcullis_policy_cache_stale_served_total")
	}
	stopPG(t, d.f)
	time.Sleep(d.outage / 2)
	var during []string
	for _, r := range rs {
		st := r.metric("portcullis_policy_cache_staleness_seconds")
		served := r.metric("portcullis_policy_cache_stale_served_total") - stale0[r.name]
		during = append(during, fmt.Sprintf("%s staleness %.0fs, %0.f stale answers, spill %.0f KB, HAProxy %s",
			r.name, st, served, r.metric("portcullis_decisions_spill_bytes")/1024, d.lb.status(r)))
		if st <= 0 || served <= 0 {
			t.Errorf("%s: staleness %.1fs and %.0f stale answers half-way through the outage; both should be above 0", r.name, st, served)
		}
	}
	time.Sleep(d.outage - d.outage/2)

	// Drill 4: the change lands as soon as the database accepts it.
	startPG(t, d.f)
	back := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := policystore.New(d.f.pool).Apply(ctx, d.f.tenants[0].id, "drills", []byte(probeBinding)); err != nil {
		t.Fatalf("apply the probe binding: %v", err)
	}
	committed := time.Now()
	enforced := d.probeEnforced(t, rs)
	var worst time.Duration
	var probes []string
	for _, r := range rs {
		took := enforced[r.name].Sub(back)
		worst = max(worst, took)
		probes = append(probes, fmt.Sprintf("%s %.2fs", r.name, took.Seconds()))
	}

	time.Sleep(5 * time.Second)
	res := l.finish()
	split := d.share(t, before)
	acc := account(res, settle(t, d.f, drillPrefix+"3-", d.a, d.b))
	var after []string
	for _, r := range rs {
		st := r.metric("portcullis_policy_cache_staleness_seconds")
		after = append(after, fmt.Sprintf("%s %.0fs", r.name, st))
		if st != 0 {
			t.Errorf("%s: staleness %.1fs after the database returned, want 0", r.name, st)
		}
	}
	d.figure("drill 3, Postgres outage of %s at %d req/s: %s (%s); %s; half-way: %s; staleness after: %s",
		d.outage, d.rate, res, split, acc, strings.Join(during, "; "), strings.Join(after, ", "))
	d.figure("drill 4, policy change as Postgres returns: committed %.2fs after it accepted connections; enforced (after its return) by %s",
		committed.Sub(back).Seconds(), strings.Join(probes, ", "))
	res.reportFailures(t, 10)
	if len(res.failed) > 0 || acc.answeredLost > 0 || acc.duplicated > 0 {
		t.Errorf("outage: %d failed admissions, %d lost decisions (%v), %d duplicated; want 0",
			len(res.failed), acc.answeredLost, acc.lostUIDs, acc.duplicated)
	}
	if worst > drillPolicyMax {
		t.Errorf("the policy change took %s to reach every replica; want at most %s", worst, drillPolicyMax)
	}
}

// probeEnforced sends the probe to each replica directly until it is
// denied, and returns when each first denied it.
func (d *drillCluster) probeEnforced(t *testing.T, rs []*replica) map[string]time.Time {
	t.Helper()
	ten := d.f.tenants[0]
	out := map[string]time.Time{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, r := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := newDrillClient(d.f, ten.name, ten.creds[0].token)
			deadline := time.Now().Add(30 * time.Second)
			for i := 0; time.Now().Before(deadline); i++ {
				uid := fmt.Sprintf("probe-%s-%d", r.name, i)
				if allowed, problem := c.review(r.webhookURL(ten.name), withUID(item{uid: "probe", body: d.probe}, uid), uid, false); problem == "" && !allowed {
					mu.Lock()
					out[r.name] = time.Now()
					mu.Unlock()
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	for _, r := range rs {
		if out[r.name].IsZero() {
			t.Fatalf("%s never enforced the new policy version within 30s", r.name)
		}
	}
	return out
}

// probePolicy denies pods labelled drillProbeKey; it has no binding until
// drill 4 applies probeBinding, so the load (which never carries the
// label) is unaffected either way.
var probePolicy = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: drill-probe
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE", "UPDATE"]
      resources: ["pods"]
  validations:
  - expression: "!has(object.metadata.labels) || !('` + drillProbeKey + `' in object.metadata.labels)"
    message: "drill probe: the new policy version holds"
    reason: Forbidden
`

const probeBinding = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: drill-probe
spec:
  policyName: drill-probe
  validationActions: [Deny]
`

// probeReview is an allowed Pod creation of the corpus with the probe
// label added, its uid "probe".
func probeReview(t *testing.T, items []item) []byte {
	t.Helper()
	for _, it := range items {
		var rev admissionv1.AdmissionReview
		if !it.allowed || json.Unmarshal(it.body, &rev) != nil || rev.Request == nil ||
			rev.Request.Kind.Kind != "Pod" || rev.Request.Operation != admissionv1.Create || rev.Request.Namespace != drillProbeNS {
			continue
		}
		var pod corev1.Pod
		if err := json.Unmarshal(rev.Request.Object.Raw, &pod); err != nil {
			t.Fatal(err)
		}
		if pod.Labels == nil {
			pod.Labels = map[string]string{}
		}
		pod.Labels[drillProbeKey] = "deny"
		raw, err := json.Marshal(&pod)
		if err != nil {
			t.Fatal(err)
		}
		rev.Request.Object.Raw = raw
		rev.Request.UID = "probe"
		b, err := json.Marshal(&rev)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	t.Fatal("no allowed Pod creation in namespace " + drillProbeNS + " in the corpus")
	return nil
}
