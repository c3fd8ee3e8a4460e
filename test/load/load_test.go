package load

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// Environment of the benchmark.
const (
	envLoad       = "PORTCULLIS_LOAD"             // 1 runs TestWebhookLoad
	envGatewayBin = "PORTCULLIS_LOAD_GATEWAY"     // prebuilt cmd/gateway; else built here
	envDuration   = "PORTCULLIS_LOAD_DURATION"    // each fixed-rate step (default 5s)
	envRounds     = "PORTCULLIS_LOAD_ROUNDS"      // saturation rounds per server (default 3)
	envRates      = "PORTCULLIS_LOAD_RATES"       // fixed rates (default 250,500,1000)
	envProfile    = "PORTCULLIS_LOAD_CPUPROFILE"  // write a gateway CPU profile here (needs the pprof build)
	envEnforce    = "PORTCULLIS_LOAD_ENFORCE"     // 1 fails the run when a target is missed
	envSustain    = "PORTCULLIS_LOAD_SUSTAIN"     // 1 adds open-loop runs at 90% of each maximum
	envRecording  = "PORTCULLIS_LOAD_RECORDING"   // 1 adds a gateway with --decision-store=false, to compare
	envTrace      = "PORTCULLIS_LOAD_TRACE"       // a directory: execution traces of an extra round of the gateway at the highest fixed rate (needs the pprof build)
	envVariant    = "PORTCULLIS_LOAD_VARIANT"     // extra gateway flags: adds a gateway "variant" run with them, to compare
	envBaseline   = "PORTCULLIS_LOAD_BASELINE"    // another prebuilt cmd/gateway (say, of an earlier commit): adds a "baseline" run of it, to compare
	envRateRounds = "PORTCULLIS_LOAD_RATE_ROUNDS" // rounds of each fixed rate (default 3); the round of median p99 is reported
	serverCPU     = 1
)

func TestMain(m *testing.M) {
	if os.Getenv(envTrivialAddr) != "" {
		runTrivial() // this binary re-executed as the reference webhook
		return
	}
	code := m.Run()
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// client drives one server over one HTTP/2 connection kept for the whole
// benchmark, as an apiserver does.
type client struct {
	srv     *server
	hc      *http.Client
	dialer  *countingDialer
	targets []vegeta.Target
	items   map[string]*item
	// onResult, when set, sees every result of the next run.
	onResult func(*vegeta.Result)
}

func newClient(f *fixture, s *server, items []item) *client {
	d := &countingDialer{}
	tr := &http.Transport{
		DialContext:     d.DialContext,
		TLSClientConfig: &tls.Config{RootCAs: f.caPool, MinVersion: tls.VersionTLS13},
		MaxConnsPerHost: 1,
		// Never a second connection: beyond the server's stream limit,
		// requests wait for a stream.
		HTTP2:     &http.HTTP2Config{StrictMaxConcurrentRequests: true},
		Protocols: new(http.Protocols),
	}
	tr.Protocols.SetHTTP2(true) // HTTP/2 only: a request fails rather than fall back
	c := &client{srv: s, dialer: d, items: map[string]*item{},
		hc: &http.Client{Transport: tr, Timeout: 10 * time.Second}}
	hdr := http.Header{
		"Content-Type":  {"application/json"},
		"Accept":        {"application/json, */*"},
		"User-Agent":    {"kube-apiserver-admission"},
		"Authorization": {"Bearer " + f.token},
	}
	for i := range items {
		c.items[items[i].uid] = &items[i]
		c.targets = append(c.targets, vegeta.Target{Method: http.MethodPost, URL: s.url + "?timeout=10s", Body: items[i].body, Header: hdr})
	}
	return c
}

// expected is the answer a server must give an item: the gateway the
// policies' decision, the trivial webhook always allowed.
func (c *client) expected(it *item) bool { return c.srv.name == "trivial" || it.allowed }

// result of one run against one server.
type result struct {
	server, load     string
	sent, errs, mism int
	duration         time.Duration
	throughput       float64 // correct answers per second
	p50, p99, max    time.Duration
	lat              []time.Duration // every correct answer's latency, sorted
	// handlerP99 is the gateway's own view: the upper bound of the bucket
	// of portcullis_webhook_request_duration_seconds that holds its 99th
	// percentile over this run (0 for the trivial webhook). The client's
	// p99 also holds TLS, HTTP/2 framing, scheduling and the client itself.
	handlerP99 float64
	// allocPerAnswer is what the gateway allocated per correct answer
	// (bytes), and gcs the collections it ran during the run; both read
	// from its Go metrics (0 for the trivial webhook).
	allocPerAnswer, gcs float64
	srvCPU, cliCPU      float64 // fraction of one core
	firstErrs, firstMis []string
}

// run sends the corpus in order, round robin: at rate req/s open-loop
// (vegeta adds workers whenever all are busy, so the schedule does not wait
// for answers), or with rate 0 closed-loop with the given number of
// requests in flight. Every answer is checked.
func (c *client) run(rate, workers int, du time.Duration) result {
	// vegeta calls the targeter from its workers concurrently.
	var mu sync.Mutex
	var n int
	targeter := func(t *vegeta.Target) error {
		mu.Lock()
		*t = c.targets[n%len(c.targets)]
		n++
		mu.Unlock()
		return nil
	}
	opts := []func(*vegeta.Attacker){vegeta.Client(c.hc), vegeta.Redirects(vegeta.NoFollow)}
	load := fmt.Sprintf("%d req/s", rate)
	if rate == 0 {
		opts = append(opts, vegeta.Workers(uint64(workers)), vegeta.MaxWorkers(uint64(workers)))
		load = fmt.Sprintf("closed, %d", workers)
	} else {
		opts = append(opts, vegeta.Workers(32))
	}
	atk := vegeta.NewAttacker(opts...)
	res := result{server: c.srv.name, load: load}
	lat := make([]time.Duration, 0, max(rate, 1000)*int(du/time.Second+1))
	if c.onResult != nil {
		defer func() { c.onResult = nil }()
	}
	h0 := scrape(c.srv)
	srv0, cli0, t0 := cpuSeconds(c.srv.cmd.Process.Pid), selfCPUSeconds(), time.Now()
	var first, last time.Time
	for r := range atk.Attack(targeter, vegeta.Rate{Freq: rate, Per: time.Second}, du, c.srv.name) {
		res.sent++
		if c.onResult != nil {
			c.onResult(r)
		}
		if first.IsZero() || r.Timestamp.Before(first) {
			first = r.Timestamp
		}
		if end := r.Timestamp.Add(r.Latency); end.After(last) {
			last = end
		}
		if msg := c.check(r); msg != "" {
			if strings.HasPrefix(msg, "mismatch") {
				res.mism++
				if len(res.firstMis) < 5 {
					res.firstMis = append(res.firstMis, msg)
				}
			} else {
				res.errs++
				if len(res.firstErrs) < 5 {
					res.firstErrs = append(res.firstErrs, msg)
				}
			}
			continue
		}
		lat = append(lat, r.Latency)
	}
	wall := time.Since(t0).Seconds()
	res.srvCPU = (cpuSeconds(c.srv.cmd.Process.Pid) - srv0) / wall
	res.cliCPU = (selfCPUSeconds() - cli0) / wall
	h1 := scrape(c.srv)
	res.handlerP99 = bucketQuantile(h0.buckets, h1.buckets, 0.99)
	if h0.buckets != nil && h1.buckets != nil {
		res.gcs = h1.gcs - h0.gcs
	}
	res.duration = last.Sub(first)
	if len(lat) > 0 {
		slices.Sort(lat)
		res.lat = lat
		res.p50, res.p99, res.max = quantile(lat, 0.50), quantile(lat, 0.99), lat[len(lat)-1]
		res.throughput = float64(len(lat)) / res.duration.Seconds()
		if h0.buckets != nil && h1.buckets != nil { // both scrapes answered
			res.allocPerAnswer = (h1.alloc - h0.alloc) / float64(len(lat))
		}
	}
	return res
}

// gatewayMetrics is what the load test reads from the gateway's /metrics.
type gatewayMetrics struct {
	// buckets is the cumulative request duration histogram: upper bound in
	// seconds -> count, summed over tenants.
	buckets    map[float64]float64
	alloc, gcs float64 // go_memstats_alloc_bytes_total, GC cycles
}

// scrape reads the gateway's metrics; the zero value for the trivial
// webhook, which has none.
func scrape(s *server) gatewayMetrics {
	var m gatewayMetrics
	if s.metrics == "" {
		return m
	}
	resp, err := http.Get(s.metrics)
	if err != nil {
		return m
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m.buckets = map[float64]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "go_memstats_alloc_bytes_total "); ok {
			m.alloc, _ = strconv.ParseFloat(v, 64)
			continue
		}
		if v, ok := strings.CutPrefix(line, "go_gc_duration_seconds_count "); ok {
			m.gcs, _ = strconv.ParseFloat(v, 64)
			continue
		}
		rest, ok := strings.CutPrefix(line, `portcullis_webhook_request_duration_seconds_bucket{`)
		if !ok {
			continue
		}
		i := strings.Index(rest, `le="`)
		j := strings.Index(rest, `"} `)
		if i < 0 || j < i {
			continue
		}
		le, err1 := strconv.ParseFloat(rest[i+4:j], 64)
		n, err2 := strconv.ParseFloat(rest[j+3:], 64)
		if err1 == nil && err2 == nil {
			m.buckets[le] += n
		}
	}
	return m
}

// bucketQuantile is the upper bound of the first bucket holding the q
// quantile of the requests counted between two readings.
func bucketQuantile(before, after map[float64]float64, q float64) float64 {
	if before == nil || after == nil {
		return 0
	}
	les := make([]float64, 0, len(after))
	for le := range after {
		les = append(les, le)
	}
	slices.Sort(les)
	total := after[math.Inf(1)] - before[math.Inf(1)]
	if total <= 0 {
		return 0
	}
	for _, le := range les {
		if after[le]-before[le] >= q*total {
			return le
		}
	}
	return math.Inf(1)
}

func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(float64(len(sorted))*q+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// reviewAnswer is the part of a response the check reads.
// checkCorpus sends every item once, one at a time.
func (c *client) checkCorpus() result {
	res := result{server: c.srv.name, load: "corpus check, serial"}
	for i := range c.targets {
		req, err := c.targets[i].Request()
		if err != nil {
			panic(err)
		}
		var r vegeta.Result
		start := time.Now()
		resp, err := c.hc.Do(req)
		if err != nil {
			r.Error = err.Error()
		} else {
			r.Code, r.Headers = uint16(resp.StatusCode), resp.Header
			r.Body, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				r.Error = err.Error()
			}
		}
		res.sent++
		res.duration += time.Since(start)
		if msg := c.check(&r); strings.HasPrefix(msg, "mismatch") {
			res.mism++
			res.firstMis = append(res.firstMis, msg)
		} else if msg != "" {
			res.errs++
			res.firstErrs = append(res.firstErrs, msg)
		}
	}
	res.throughput = float64(res.sent) / res.duration.Seconds()
	return res
}

type reviewAnswer struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Response   *struct {
		UID     string `json:"uid"`
		Allowed bool   `json:"allowed"`
		Status  *struct {
			Code    int32  `json:"code"`
			Message string `json:"message"`
		} `json:"status"`
	} `json:"response"`
}

// check returns "" for a correct answer, "mismatch: ..." for a well-formed
// answer with the wrong decision, else the error.
func (c *client) check(r *vegeta.Result) string {
	if r.Error != "" && r.Code == 0 {
		return "error: " + r.Error
	}
	if r.Code != http.StatusOK {
		return fmt.Sprintf("error: status %d: %.200s", r.Code, r.Body)
	}
	if ct := r.Headers.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return "error: Content-Type " + ct
	}
	var a reviewAnswer
	if err := json.Unmarshal(r.Body, &a); err != nil {
		return "error: response body: " + err.Error()
	}
	if a.APIVersion != "admission.k8s.io/v1" || a.Kind != "AdmissionReview" || a.Response == nil {
		return fmt.Sprintf("error: not an AdmissionReview v1 response: %.200s", r.Body)
	}
	it := c.items[a.Response.UID]
	if it == nil {
		return fmt.Sprintf("error: unknown uid %q", a.Response.UID)
	}
	if want := c.expected(it); a.Response.Allowed != want {
		msg := ""
		if a.Response.Status != nil {
			msg = a.Response.Status.Message
		}
		return fmt.Sprintf("mismatch: %s %s: allowed=%t, want %t (%.200s)", it.uid, it.desc, a.Response.Allowed, want, msg)
	}
	if !a.Response.Allowed && (a.Response.Status == nil || a.Response.Status.Code < 400) {
		return fmt.Sprintf("mismatch: %s %s: denied without a 4xx status", it.uid, it.desc)
	}
	return ""
}

func envInt(t *testing.T, name string, def int) int {
	if v := os.Getenv(name); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("%s=%q: %v", name, v, err)
		}
		return n
	}
	return def
}

// built is the gateway binary this process built, once for all its tests
// (the fast drills run two); TestMain removes it.
var built struct {
	once      sync.Once
	dir, path string
	err       error
}

func gatewayBinary(t *testing.T) string {
	if bin := os.Getenv(envGatewayBin); bin != "" {
		return bin
	}
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "portcullis-gateway-"); built.err != nil {
			return
		}
		built.path = filepath.Join(built.dir, "gateway")
		cmd := exec.Command("go", "build", "-o", built.path, "./cmd/gateway")
		cmd.Dir = filepath.Join("..", "..")
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("%w\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatalf("build the gateway: %v", built.err)
	}
	return built.path
}

// TestWebhookLoad is the load test of issue 12 (see scripts/bench-load.sh).
func TestWebhookLoad(t *testing.T) {
	if os.Getenv(envLoad) != "1" {
		t.Skip("a benchmark: set " + envLoad + "=1, or run scripts/bench-load.sh")
	}
	if _, err := exec.LookPath("taskset"); err != nil {
		t.Fatal("taskset is needed to pin the servers")
	}
	if runtime.GOMAXPROCS(0) != 1 {
		t.Logf("note: the client runs with GOMAXPROCS=%d; run it under taskset -c 0", runtime.GOMAXPROCS(0))
	}
	du := time.Duration(envInt(t, envDuration, 5)) * time.Second
	rounds := envInt(t, envRounds, 3)
	rates := []int{250, 500, 1000}
	if v := os.Getenv(envRates); v != "" {
		rates = nil
		for _, s := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || n <= 0 {
				t.Fatalf("%s=%q", envRates, v)
			}
			rates = append(rates, n)
		}
	}

	items := buildCorpus(t)
	f := newFixture(t)
	bin := gatewayBinary(t)
	profile, traceDir := os.Getenv(envProfile), os.Getenv(envTrace)
	pprofAddr := ""
	if profile != "" || traceDir != "" {
		pprofAddr = freeAddr(t)
	}
	// Each gateway serves pprof on an address of its own when profiling.
	pprofFor := func() string {
		if profile == "" {
			return ""
		}
		return freeAddr(t)
	}
	gw := startGateway(t, f, bin, "gateway", serverCPU, pprofAddr)
	tv := startTrivial(t, f, serverCPU)
	clients := []*client{newClient(f, tv, items), newClient(f, gw, items)}
	recording := os.Getenv(envRecording) == "1"
	if recording {
		// The same gateway with decisions kept out of the database: what
		// recording costs is the difference of their maximum throughputs.
		off := startGateway(t, f, bin, "norecord", serverCPU, pprofFor(), "--decision-store=false")
		clients = append(clients, newClient(f, off, items))
	}
	if v := strings.Fields(os.Getenv(envVariant)); len(v) > 0 {
		vs := startGateway(t, f, bin, "variant", serverCPU, pprofFor(), v...)
		clients = append(clients, newClient(f, vs, items))
	}
	if base := os.Getenv(envBaseline); base != "" {
		bs := startGateway(t, f, base, "baseline", serverCPU, pprofFor())
		clients = append(clients, newClient(f, bs, items))
	}
	rateRounds := envInt(t, envRateRounds, 3)
	if rateRounds < 1 {
		t.Fatalf("%s=%d: at least one round", envRateRounds, rateRounds)
	}

	var all []result
	record := func(r result) { all = append(all, r) }
	// 1. Every item once, in order, so a wrong answer names its item.
	for _, c := range clients {
		r := c.checkCorpus()
		record(r)
		if r.errs+r.mism > 0 {
			printTable(all)
			t.Fatalf("%s: corpus check failed: %v %v", c.srv.name, r.firstErrs, r.firstMis)
		}
	}
	// 2. Warm-up (both servers reach steady heap and caches).
	for _, c := range clients {
		r := c.run(500, 0, 2*time.Second)
		r.load = "warm-up 500 req/s"
		record(r)
	}
	// 3. Maximum throughput: closed loop, 64 requests in flight on the one
	// connection, rounds alternating between servers; median per server.
	sat := map[string][]result{}
	for i := range rounds {
		for j := range clients {
			c := clients[(i+j)%len(clients)]
			r := c.run(0, 64, 3*time.Second)
			record(r)
			sat[c.srv.name] = append(sat[c.srv.name], r)
			time.Sleep(300 * time.Millisecond)
		}
	}
	maxOf := func(name string) result {
		rs := slices.Clone(sat[name])
		sort.Slice(rs, func(a, b int) bool { return rs[a].throughput < rs[b].throughput })
		return rs[len(rs)/2]
	}
	tvMax, gwMax := maxOf("trivial"), maxOf("gateway")
	// 4. Open loop at 90% of each server's maximum: the maximum is
	// sustainable (the rate is met, latency stays bounded).
	for _, c := range clients {
		if os.Getenv(envSustain) != "1" {
			break
		}
		m := maxOf(c.srv.name)
		r := c.run(int(m.throughput*0.9), 0, 3*time.Second)
		r.load = fmt.Sprintf("90%% max: %d/s", int(m.throughput*0.9))
		record(r)
		time.Sleep(300 * time.Millisecond)
	}
	// 5. The fixed rates of the report, in rounds alternating between
	// servers. Host contention on a shared machine comes in bursts that can
	// spoil one round's tail; the round of median p99 is reported.
	fixed := map[string]map[int]result{}
	for _, c := range clients {
		fixed[c.srv.name] = map[int]result{}
	}
	for _, rate := range rates {
		byServer := map[string][]result{}
		for round := range rateRounds {
			for j := range clients {
				c := clients[(round+j)%len(clients)]
				r := c.run(rate, 0, du)
				record(r)
				byServer[c.srv.name] = append(byServer[c.srv.name], r)
				time.Sleep(300 * time.Millisecond)
			}
		}
		for name, rs := range byServer {
			sort.Slice(rs, func(a, b int) bool { return rs[a].p99 < rs[b].p99 })
			fixed[name][rate] = rs[len(rs)/2]
		}
	}
	// Tracing slows both sides, so the traced round is an extra one, kept
	// out of the figures above.
	if traceDir != "" {
		r := clients[1].traced(t, pprofAddr, traceDir, slices.Max(rates), du)
		r.load += " (traced)"
		record(r)
	}

	// 6. Optionally, a CPU profile of each gateway at saturation.
	for _, c := range clients {
		if profile == "" || c.srv.pprof == "" {
			continue
		}
		path := profile
		if c.srv.name != "gateway" {
			path += "." + c.srv.name
		}
		done := make(chan error, 1)
		go func() { done <- fetchProfile(c.srv.pprof, path, 8) }()
		record(c.run(0, 64, 9*time.Second))
		if err := <-done; err != nil {
			t.Errorf("%s profile: %v", c.srv.name, err)
		} else {
			fmt.Printf("%s CPU profile (8 s at saturation): %s\n", c.srv.name, path)
		}
		if err := fetchPprof(c.srv.pprof, "allocs", path+".allocs", 0); err != nil {
			t.Errorf("%s allocation profile: %v", c.srv.name, err)
		} else {
			fmt.Printf("%s allocations since it started: %s.allocs\n", c.srv.name, path)
		}
	}

	printTable(all)
	conns := []string{}
	for _, c := range clients {
		conns = append(conns, fmt.Sprintf("%s %d", c.srv.name, c.dialer.count.Load()))
	}
	fmt.Printf("\nconnections opened: %s (HTTP/2 only, TLS 1.3, bearer token)\n", strings.Join(conns, ", "))
	fmt.Printf("corpus: %d AdmissionReview v1 bodies (Pods, Deployments, deployments/scale; CREATE/UPDATE/DELETE), %d denied by the baseline set, mean %d bytes\n",
		len(items), countDenied(items), meanSize(items))

	fmt.Printf("\n== summary (server: GOMAXPROCS=1, taskset -c %d; client: this process)\n", serverCPU)
	fmt.Printf("%-34s %12s %12s\n", "", "trivial", "gateway")
	fmt.Printf("%-34s %12.0f %12.0f\n", "max throughput (req/s, median)", tvMax.throughput, gwMax.throughput)
	fmt.Printf("%-34s %11.0f%% %11.0f%%\n", "  server CPU during it", tvMax.srvCPU*100, gwMax.srvCPU*100)
	fmt.Printf("%-34s %11.0f%% %11.0f%%\n", "  client CPU during it", tvMax.cliCPU*100, gwMax.cliCPU*100)
	fmt.Printf("p50 / p99 ms at fixed rates (round of median p99 of %d):\n", rateRounds)
	for _, rate := range rates {
		line := fmt.Sprintf("  %d req/s", rate)
		for _, c := range clients {
			r := fixed[c.srv.name][rate]
			line += fmt.Sprintf("  %s %s/%s", c.srv.name, ms(r.p50), ms(r.p99))
		}
		fmt.Println(line)
	}
	ratio := gwMax.throughput / tvMax.throughput
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "MISSED"
	}
	fmt.Printf("\nthroughput ratio gateway/trivial: %.0f%% (target >= 60%%: %s)\n", ratio*100, verdict(ratio >= 0.6))
	missed := ratio < 0.6
	if recording {
		offMax := maxOf("norecord")
		rec := gwMax.throughput / offMax.throughput
		fmt.Printf("recording on vs off (--decision-store=false): %.0f vs %.0f req/s: %.0f%% (target >= 85%%: %s)\n",
			gwMax.throughput, offMax.throughput, rec*100, verdict(rec >= 0.85))
		missed = missed || rec < 0.85
		// On a shared machine the maxima move with how much of its core each
		// server got; per second of server CPU, and in CPU per answer at a
		// fixed rate, they move much less.
		onCore, offCore := perCore(sat["gateway"]), perCore(sat["norecord"])
		fmt.Printf("  per second of server CPU (median of rounds): %.0f vs %.0f answers: %.0f%%\n",
			onCore, offCore, onCore/offCore*100)
		for _, rate := range rates {
			on, off := fixed["gateway"][rate], fixed["norecord"][rate]
			fmt.Printf("  server CPU per answer at %d req/s: %s vs %s µs\n", rate, cpuPerAnswer(on), cpuPerAnswer(off))
		}
		fmt.Printf("decisions recorded: %s\n", recorderCounts(gw))
	}
	if r, ok := fixed["gateway"][1000]; ok {
		fmt.Printf("gateway p99 at 1000 req/s: %s ms (target <= 5 ms: %s); its handler's own p99: <= %s ms\n",
			ms(r.p99), verdict(r.p99 <= 5*time.Millisecond), ms(time.Duration(r.handlerP99*float64(time.Second))))
		missed = missed || r.p99 > 5*time.Millisecond
	}
	if _, ok := sat["baseline"]; ok {
		baseMax := maxOf("baseline")
		fmt.Printf("gateway vs baseline max throughput: %.0f vs %.0f req/s: %.0f%%; per second of server CPU: %.0f%%\n",
			gwMax.throughput, baseMax.throughput, gwMax.throughput/baseMax.throughput*100,
			perCore(sat["gateway"])/perCore(sat["baseline"])*100)
		for _, rate := range rates {
			g, b := fixed["gateway"][rate], fixed["baseline"][rate]
			fmt.Printf("  p99 at %d req/s: gateway %s ms, baseline %s ms; server CPU per answer %s vs %s µs\n",
				rate, ms(g.p99), ms(b.p99), cpuPerAnswer(g), cpuPerAnswer(b))
		}
	}
	if tvMax.srvCPU < 0.9 {
		fmt.Printf("note: the trivial webhook used %.0f%% of its core at saturation: the client, not the server, may limit it, which flatters the ratio\n", tvMax.srvCPU*100)
	}

	var errs, mism int
	for _, r := range all {
		errs += r.errs
		mism += r.mism
		for _, e := range append(r.firstErrs, r.firstMis...) {
			t.Errorf("%s, %s: %s", r.server, r.load, e)
		}
	}
	fmt.Printf("errors: %d, mismatches: %d\n", errs, mism)
	if errs+mism > 0 {
		t.Fatalf("%d errors and %d wrong decisions", errs, mism)
	}
	if missed && os.Getenv(envEnforce) == "1" {
		t.Fatal("a performance target was missed")
	}
}

func printTable(all []result) {
	fmt.Printf("\n%-8s %-22s %7s %5s %5s %9s %8s %8s %8s %7s %7s %8s %4s\n",
		"server", "load", "sent", "err", "mism", "ok req/s", "p50 ms", "p99 ms", "max ms", "srv CPU", "cli CPU", "KB/answ", "GCs")
	for _, r := range all {
		alloc, gcs := "-", "-"
		if r.allocPerAnswer > 0 {
			alloc, gcs = strconv.FormatFloat(r.allocPerAnswer/1024, 'f', 1, 64), strconv.Itoa(int(r.gcs))
		}
		fmt.Printf("%-8s %-22s %7d %5d %5d %9.0f %8s %8s %8s %6.0f%% %6.0f%% %8s %4s\n",
			r.server, r.load, r.sent, r.errs, r.mism, r.throughput, ms(r.p50), ms(r.p99), ms(r.max), r.srvCPU*100, r.cliCPU*100, alloc, gcs)
	}
}

// perCore is the median over rounds of correct answers per second of
// server CPU.
func perCore(rs []result) float64 {
	var xs []float64
	for _, r := range rs {
		if r.srvCPU > 0 {
			xs = append(xs, r.throughput/r.srvCPU)
		}
	}
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// cpuPerAnswer is the server's CPU time per correct answer, in µs.
func cpuPerAnswer(r result) string {
	if r.throughput == 0 {
		return "-"
	}
	return strconv.FormatFloat(r.srvCPU/r.throughput*1e6, 'f', 0, 64)
}

func ms(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 2, 64) }

func countDenied(items []item) (n int) {
	for _, it := range items {
		if !it.allowed {
			n++
		}
	}
	return n
}

func meanSize(items []item) int {
	s := 0
	for _, it := range items {
		s += len(it.body)
	}
	return s / len(items)
}

func fetchProfile(addr, path string, seconds int) error {
	return fetchPprof(addr, "profile", path, seconds)
}

// fetchPprof saves /debug/pprof/<kind> of the gateway to path, over the
// next N seconds when N > 0.
func fetchPprof(addr, kind, path string, seconds int) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(seconds+20)*time.Second)
	defer cancel()
	url := fmt.Sprintf("http://%s/debug/pprof/%s", addr, kind)
	if seconds > 0 {
		url += "?seconds=" + strconv.Itoa(seconds)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("%s: %s", resp.Status, b)
	}
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, resp.Body); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
