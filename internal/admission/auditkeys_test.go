package admission_test

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/portcullis-dev/portcullis/internal/admission"
)

func TestWebhookAuditKey(t *testing.T) {
	long := strings.Repeat("very-long-policy-name.", 4) + "x" // 89 characters
	sum := sha256.Sum256([]byte(long))
	h := hex.EncodeToString(sum[:])[:8]
	tests := []struct{ name, in, want string }{
		{"validation failure", "validation.policy.admission.k8s.io/validation_failure", "validation_failure"},
		{"policy key", "require-labels/missing", "require-labels.missing"},
		{"exactly 63", strings.Repeat("p", 55) + "/" + "seven77", strings.Repeat("p", 55) + ".seven77"},
		{"too long: cut and hashed", long + "/team", long[:63-len("team")-10] + "-" + h + ".team"},
		{"no slash stays", "plain", "plain"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := admission.WebhookAuditKey(tt.in)
			if got != tt.want {
				t.Fatalf("WebhookAuditKey(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if len(got) > 63 {
				t.Fatalf("%q is %d characters", got, len(got))
			}
			if errs := validation.IsQualifiedName(got); len(errs) > 0 || strings.Contains(got, "/") {
				t.Fatalf("%q is not a key the apiserver keeps: %v", got, errs)
			}
		})
	}
	// Cut names are exactly 63 characters, and two long names that share
	// the kept prefix stay distinct.
	a := admission.WebhookAuditKey(long + "a/k")
	b := admission.WebhookAuditKey(long + "b/k")
	if len(a) != 63 || len(b) != 63 || a == b {
		t.Fatalf("a=%q (%d) b=%q (%d)", a, len(a), b, len(b))
	}
	// A key too long to leave room for any of the policy name still fits.
	k := admission.WebhookAuditKey(long + "/" + strings.Repeat("k", 63))
	if len(k) != 63 || validation.IsQualifiedName(k) != nil {
		t.Fatalf("%q (%d)", k, len(k))
	}
}
