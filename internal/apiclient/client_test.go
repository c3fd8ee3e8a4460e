package apiclient

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
	"github.com/portcullis-dev/portcullis/internal/fault"
)

// The same requests reach the API over HTTP and in-process.
func TestRequest(t *testing.T) {
	type seen struct{ method, uri, auth, accept, ctype, body, remote string }
	var got seen
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = seen{r.Method, r.RequestURI, r.Header.Get("Authorization"), r.Header.Get("Accept"), r.Header.Get("Content-Type"), string(b), r.RemoteAddr}
		w.Write([]byte(`{"name":"t"}`))
	})
	srv := httptest.NewServer(h)
	defer srv.Close()
	for _, tc := range []struct {
		name   string
		c      *Client
		remote func(string) bool
	}{
		{"http", &Client{Base: srv.URL + "/", Token: "secret", HTTP: srv.Client()}, func(a string) bool { return strings.HasPrefix(a, "127.0.0.1:") }},
		{"in-process", &Client{Token: "secret", HTTP: InProcess(h)}, func(a string) bool { return a == "ui" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out apiv1.Tenant
			b, err := tc.c.Send(context.Background(), http.MethodPost, Path("tenants", "a b/c"), url.Values{"dryRun": {"true"}},
				apiv1.TenantCreate{Name: "t"}, &out)
			if err != nil || out.Name != "t" || string(b) != `{"name":"t"}` {
				t.Fatalf("Send = %s, %+v, %v", b, out, err)
			}
			want := seen{"POST", "/api/v1/tenants/a%20b%2Fc?dryRun=true", "Bearer secret", "application/json", "application/json", `{"name":"t"}`, ""}
			remote := got.remote
			got.remote = ""
			if got != want || !tc.remote(remote) {
				t.Errorf("the API saw %+v from %q, want %+v", got, remote, want)
			}
			// No token, no Authorization: the UI names it in the context.
			if _, err := (&Client{Base: tc.c.Base, HTTP: tc.c.HTTP}).Get(context.Background(), Path("whoami"), nil, nil); err != nil || got.auth != "" || got.ctype != "" {
				t.Errorf("without a token: %+v, %v", got, err)
			}
		})
	}
}

// Every error answer is read once, into an *Error that unwraps to fault.
func TestErrorAnswers(t *testing.T) {
	invalid := fault.Status(&fault.Error{Code: fault.Invalid, Message: "spec.x: bad", Kind: "Cluster", Name: "c",
		Causes: []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Field: "spec.x", Message: "bad"}}})
	invalidJSON, _ := json.Marshal(invalid)
	taken, _ := json.Marshal(fault.Status(fault.Errorf(fault.AlreadyExists, "tenant \"a\" exists")))
	for _, tc := range []struct {
		name    string
		status  int
		body    string
		code    fault.Code
		reason  metav1.StatusReason
		message string
		causes  int
	}{
		{"a Status with causes", 422, string(invalidJSON), fault.Invalid, metav1.StatusReasonInvalid, "spec.x: bad", 1},
		{"a name taken", 409, string(taken), fault.AlreadyExists, metav1.StatusReasonAlreadyExists, `tenant "a" exists`, 0},
		{"a proxy's page", 502, "<html>bad gateway</html>\n", fault.Internal, "", "<html>bad gateway</html>", 0},
		{"no body", 503, "", fault.Unavailable, "", "Service Unavailable", 0},
		{"a Status without a message", 404, `{"kind":"Status","code":404}`, fault.NotFound, "", `{"kind":"Status","code":404}`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Client{HTTP: InProcess(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			}))}
			_, err := c.Get(context.Background(), Path("tenants"), nil, nil)
			var ae *Error
			if !errors.As(err, &ae) {
				t.Fatalf("err = %T %v, want *Error", err, err)
			}
			if ae.HTTPStatus != tc.status || ae.Status.Reason != tc.reason || ae.Error() != tc.message || len(ae.Causes()) != tc.causes {
				t.Errorf("Error = %d %q %q causes %v", ae.HTTPStatus, ae.Status.Reason, ae.Error(), ae.Causes())
			}
			if fault.ErrorCode(err) != tc.code || ae.Fault().Message != tc.message {
				t.Errorf("as fault: %s %q, want %s", fault.ErrorCode(err), ae.Fault().Message, tc.code)
			}
			if int(fault.Status(err).Code) != tc.status && tc.code != fault.Internal {
				t.Errorf("fault.Status of the error = %d, want %d", fault.Status(err).Code, tc.status)
			}
		})
	}
	// The object and causes come through to fault.
	c := &Client{HTTP: InProcess(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(422)
		w.Write(invalidJSON)
	}))}
	_, err := c.Get(context.Background(), "/api/v1/x", nil, nil)
	var fe *fault.Error
	if !errors.As(err, &fe) || fe.Kind != "Cluster" || fe.Name != "c" || len(fe.Causes) != 1 || fe.Causes[0].Field != "spec.x" {
		t.Errorf("fault.Error = %+v", fe)
	}
}

func TestTransportError(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	u, _ := url.Parse(srv.URL)
	_, err := (&Client{Base: srv.URL, HTTP: &http.Client{}}).Get(context.Background(), Path("whoami"), nil, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "GET "+u.Host+": ") || strings.Contains(err.Error(), "/api/v1") {
		t.Errorf("err = %v, want GET %s: ... without the URL", err, u.Host)
	}
	var ae *Error
	if errors.As(err, &ae) {
		t.Errorf("a request without an answer is no *Error")
	}
}

func TestDecodeAnswer(t *testing.T) {
	c := &Client{HTTP: InProcess(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		io.WriteString(w, `{"name": 3}`)
	}))}
	var out apiv1.Tenant
	if _, err := c.Get(context.Background(), "/api/v1/tenants/a", nil, &out); err == nil || !strings.Contains(err.Error(), "the server's answer to GET /api/v1/tenants/a") {
		t.Errorf("a bad answer: %v", err)
	}
	if _, err := c.Send(context.Background(), http.MethodDelete, "/api/v1/tenants/a", nil, nil, &out); err != nil {
		t.Errorf("an empty answer to a DELETE: %v", err)
	}
}

func TestListAll(t *testing.T) {
	var limits []string
	c := &Client{HTTP: InProcess(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limits = append(limits, r.URL.Query().Get(apiv1.QueryLimit))
		switch r.URL.Query().Get(apiv1.QueryContinue) {
		case "":
			io.WriteString(w, `{"items":[{"name":"a"}],"continue":"p2"}`)
		case "p2":
			io.WriteString(w, `{"items":[{"name":"b"}]}`)
		}
	}))}
	items, raw, err := ListAll[apiv1.Tenant](context.Background(), c, Path("tenants"), nil)
	if err != nil || len(items) != 2 || items[0].Name != "a" || items[1].Name != "b" {
		t.Fatalf("ListAll = %+v, %v", items, err)
	}
	var all apiv1.List[map[string]any]
	if json.Unmarshal(raw, &all) != nil || len(all.Items) != 2 || all.Continue != "" {
		t.Errorf("the answer of two pages is one List: %s", raw)
	}
	if len(limits) != 2 || limits[0] != "1000" {
		t.Errorf("limits = %v, want the most per page", limits)
	}

	// One page: the server's own answer.
	c.HTTP = InProcess(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"items":[]}`)
	}))
	items, raw, err = ListAll[apiv1.Tenant](context.Background(), c, Path("tenants"), nil)
	if err != nil || len(items) != 0 || string(raw) != `{"items":[]}` {
		t.Errorf("one page: %v %s %v", items, raw, err)
	}
}
