package api

import (
	"encoding/base64"
	"fmt"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
	"github.com/portcullis-dev/portcullis/internal/fault"
)

// limit is the ?limit= of a listing, between 1 and apiv1.MaxLimit.
func (c *call) limit() (int64, error) {
	limit, err := c.queryInt(apiv1.QueryLimit, apiv1.DefaultLimit)
	if err != nil {
		return 0, err
	}
	if limit < 1 || limit > apiv1.MaxLimit {
		return 0, fault.InvalidField(apiv1.QueryLimit, "must be between 1 and %d", apiv1.MaxLimit)
	}
	return limit, nil
}

// page cuts one page out of items, which are sorted by key (ascending and
// unique): the page starts after the cursor. Keys are opaque to clients.
func page[T any](c *call, items []T, key func(T) string) (apiv1.List[T], error) {
	limit, err := c.limit()
	if err != nil {
		return apiv1.List[T]{}, err
	}
	start := 0
	if cur := c.query(apiv1.QueryContinue); cur != "" {
		after, err := decodeCursor(cur)
		if err != nil {
			return apiv1.List[T]{}, err
		}
		for start < len(items) && key(items[start]) <= after {
			start++
		}
	}
	end := min(start+int(limit), len(items))
	out := apiv1.List[T]{Items: items[start:end]}
	if out.Items == nil {
		out.Items = []T{}
	}
	if end < len(items) {
		out.Continue = encodeCursor(key(items[end-1]))
	}
	return out, nil
}

// sortKey makes ids sort as strings in numeric order, for page.
func sortKey(id int64) string { return fmt.Sprintf("%020d", id) }

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
