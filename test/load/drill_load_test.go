package load

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"
)

// drillClient is one apiserver: a tenant's cluster with its token, on its
// own HTTP/2 connection (a new one after the server sends GOAWAY).
type drillClient struct {
	tenant, token string
	hc            *http.Client
}

func newDrillClient(f *fixture, tenant, token string) *drillClient {
	tr := &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: f.caPool, MinVersion: tls.VersionTLS13},
		Protocols:       new(http.Protocols),
	}
	tr.Protocols.SetHTTP2(true)
	return &drillClient{tenant: tenant, token: token, hc: &http.Client{Transport: tr, Timeout: drillTimeout}}
}

// review sends one AdmissionReview to url and checks the answer against
// want; it returns "" when the answer is right, else what went wrong.
func (c *drillClient) review(url string, body []byte, uid string, want bool) (allowed bool, problem string) {
	req, err := http.NewRequest(http.MethodPost, url+"?timeout=10s", bytes.NewReader(body))
	if err != nil {
		return false, err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.hc.Do(req)
	if err != nil {
		return false, "error: " + err.Error()
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return false, "error: reading the body: " + err.Error()
	}
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Sprintf("status %d: %.200s", resp.StatusCode, b)
	}
	var a reviewAnswer
	if err := json.Unmarshal(b, &a); err != nil || a.Response == nil {
		return false, fmt.Sprintf("not an AdmissionReview: %.200s", b)
	}
	if a.Response.UID != uid {
		return a.Response.Allowed, fmt.Sprintf("uid %q, want %q", a.Response.UID, uid)
	}
	if a.Response.Allowed != want {
		return a.Response.Allowed, fmt.Sprintf("%s: allowed=%t, want %t", uid, a.Response.Allowed, want)
	}
	return a.Response.Allowed, ""
}

// withUID returns the item's body with its uid replaced by uid.
func withUID(it item, uid string) []byte {
	return bytes.Replace(it.body, []byte(`"uid":"`+it.uid+`"`), []byte(`"uid":"`+uid+`"`), 1)
}

// outcome is one request of the load.
type outcome struct {
	uid        string
	client     int // index of the client (connection) that sent it
	start, end time.Time
	problem    string // "" when answered right
}

// load is an open-loop client: requests leave on a fixed schedule, each
// on its own goroutine, whatever the answers take; each has a unique uid,
// prefix-N, so its stored decision can be counted.
type load struct {
	url     string // HAProxy's frontend
	prefix  string
	rate    int
	clients []*drillClient
	items   []item
	stop    chan struct{}
	done    chan struct{}
	wg      sync.WaitGroup

	mu       sync.Mutex
	outcomes []outcome
}

func startLoad(t *testing.T, f *fixture, url, prefix string, rate int, items []item) *load {
	t.Helper()
	l := &load{url: url, prefix: prefix, rate: rate, items: items,
		stop: make(chan struct{}), done: make(chan struct{})}
	for _, ten := range f.tenants {
		for _, c := range ten.creds {
			l.clients = append(l.clients, newDrillClient(f, ten.name, c.token))
		}
	}
	go l.run()
	return l
}

func (l *load) run() {
	defer close(l.done)
	interval := time.Second / time.Duration(l.rate)
	start := time.Now()
	for i := 0; ; i++ {
		next := start.Add(time.Duration(i) * interval)
		select {
		case <-l.stop:
			return
		case <-time.After(time.Until(next)):
		}
		ci := i % len(l.clients)
		c := l.clients[ci]
		it := l.items[(i/len(l.clients))%len(l.items)]
		uid := fmt.Sprintf("%s-%07d", l.prefix, i)
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			o := outcome{uid: uid, client: ci, start: time.Now()}
			_, o.problem = c.review(l.url+"/t/"+c.tenant+"/validate", withUID(it, uid), uid, it.allowed)
			o.end = time.Now()
			l.mu.Lock()
			l.outcomes = append(l.outcomes, o)
			l.mu.Unlock()
		}()
	}
}

// finish stops sending, waits for every answer and returns the outcomes.
func (l *load) finish() loadResult {
	close(l.stop)
	<-l.done
	l.wg.Wait()
	for _, c := range l.clients {
		c.hc.CloseIdleConnections()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	r := loadResult{outcomes: l.outcomes}
	var lat []time.Duration
	for _, o := range l.outcomes {
		if o.problem == "" {
			r.answered++
			lat = append(lat, o.end.Sub(o.start))
		} else {
			r.failed = append(r.failed, o)
		}
		if r.first.IsZero() || o.start.Before(r.first) {
			r.first = o.start
		}
		if o.end.After(r.last) {
			r.last = o.end
		}
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		r.p99, r.max = quantile(lat, 0.99), lat[len(lat)-1]
	}
	return r
}

type loadResult struct {
	outcomes    []outcome
	answered    int
	failed      []outcome
	first, last time.Time
	p99, max    time.Duration
}

func (r loadResult) sent() int { return len(r.outcomes) }

// String is the load's figure line.
func (r loadResult) String() string {
	return fmt.Sprintf("%d sent over %.0fs, %d answered, %d failed, p99 %s ms, max %s ms",
		r.sent(), r.last.Sub(r.first).Seconds(), r.answered, len(r.failed), ms(r.p99), ms(r.max))
}

// reportFailures logs the first failures of a load.
func (r loadResult) reportFailures(t *testing.T, n int) {
	t.Helper()
	for i, o := range r.failed {
		if i == n {
			t.Logf("... and %d more", len(r.failed)-n)
			break
		}
		t.Logf("failed %s (sent %s): %s", o.uid, o.start.Format("15:04:05.000"), o.problem)
	}
}

// accounting compares the answered requests of a load with the stored
// decisions of its prefix.
type accounting struct {
	answeredStored, answeredLost, failedStored, duplicated int
	lostUIDs                                               []string
}

func account(r loadResult, stored map[string]int) accounting {
	var a accounting
	for _, o := range r.outcomes {
		n := stored[o.uid]
		if n > 1 {
			a.duplicated += n - 1
		}
		switch {
		case o.problem == "" && n > 0:
			a.answeredStored++
		case o.problem == "":
			a.answeredLost++
			if len(a.lostUIDs) < 5 {
				a.lostUIDs = append(a.lostUIDs, o.uid)
			}
		case n > 0:
			a.failedStored++
		}
	}
	return a
}

func (a accounting) String() string {
	return fmt.Sprintf("stored %d of the answered, %d answered but not stored, %d duplicated, %d failed at the client but stored",
		a.answeredStored, a.answeredLost, a.duplicated, a.failedStored)
}
