package artifacts_test

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"

	"github.com/portcullis-dev/portcullis/internal/tenancy/artifacts"
)

// A url credential's secret goes into the path of both webhooks' URLs, in a
// form the apiserver accepts for clientConfig.url (https, no user info, no
// query), with the caBundle as for every kind.
func TestWebhooksCarryTheURLSecret(t *testing.T) {
	const secret = "pcuk_abcdefghijklmnopqrstuvwxyz234567abcdefghijklmnopqr"
	ca := []byte(certPEM)
	o := artifacts.WebhookOptions{GatewayURL: "https://gw.example.com:8443/pc", Tenant: "acme", CABundle: ca, URLSecret: secret}
	b, err := artifacts.Webhooks(o)
	if err != nil {
		t.Fatal(err)
	}
	docs := bytes.Split(b, []byte("\n---\n"))
	if len(docs) != 2 {
		t.Fatalf("%d documents", len(docs))
	}
	v := decodeVWC(t, docs[0]).Webhooks[0].ClientConfig
	m := decodeMWC(t, docs[1]).Webhooks[0].ClientConfig
	for _, tc := range []struct {
		name, got, want string
		ca              []byte
	}{
		{"validate", *v.URL, "https://gw.example.com:8443/pc/t/acme/k/" + secret + "/validate", v.CABundle},
		{"mutate", *m.URL, "https://gw.example.com:8443/pc/t/acme/k/" + secret + "/mutate", m.CABundle},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want || !bytes.Equal(tc.ca, ca) {
				t.Fatalf("url %q caBundle %q, want %q with the CA", tc.got, tc.ca, tc.want)
			}
			if errs := webhookutil.ValidateWebhookURL(field.NewPath("clientConfig", "url"), tc.got, true); len(errs) > 0 {
				t.Fatalf("the apiserver would refuse it: %v", errs)
			}
		})
	}
	if got := artifacts.URLSecretPath("acme", "", "validate"); got != "/t/acme/validate" {
		t.Fatalf("path without a secret: %q", got)
	}

	for _, tc := range []struct{ name, secret string }{
		{"too short", "pcuk_abc"},
		{"two segments", "pcuk_abcdefghijklmnopqrstu/vwxyz"},
		{"query", "pcuk_abcdefghijklmnopqrstu?vwxyz"},
		{"escaped", "pcuk_abcdefghijklmnopqrstu%2Fvwxyz"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o.URLSecret = tc.secret
			_, err := artifacts.Webhooks(o)
			if err == nil {
				t.Fatal("no error")
			}
			// The error may be logged: it never quotes the secret.
			if strings.Contains(err.Error(), tc.secret) {
				t.Fatalf("error quotes the secret: %v", err)
			}
		})
	}
}
