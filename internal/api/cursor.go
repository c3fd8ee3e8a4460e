package api

import (
	"encoding/base64"

	"github.com/portcullis-dev/portcullis/internal/fault"
)

// Cursors are base64url so that clients treat them as opaque and they pass
// through query strings unescaped.
func encodeCursor(key string) string { return base64.RawURLEncoding.EncodeToString([]byte(key)) }

func decodeCursor(s string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return "", fault.InvalidField("continue", "is not a cursor this API returned")
	}
	return string(b), nil
}
