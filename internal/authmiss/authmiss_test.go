package authmiss

import (
	"crypto/sha256"
	"strconv"
	"testing"
	"time"
)

func key(s string) [32]byte { return sha256.Sum256([]byte(s)) }

func TestLimiter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := New(func() time.Time { return now }, 3, time.Second, 0)
	check := func(addr, k string, want Verdict) {
		t.Helper()
		if v, _ := l.Check(addr, key(k)); v != want {
			t.Fatalf("Check(%s, %s) = %v, want %v", addr, k, v, want)
		}
	}
	l.Hit(key("valid"))
	for i := range 3 {
		k := "wrong" + strconv.Itoa(i)
		check("10.0.0.1", k, Lookup)
		l.Miss("10.0.0.1", key(k))
	}
	// A key found unknown is not looked up again for a minute.
	check("10.0.0.9", "wrong0", Unknown)
	// The address has used its lookups; a new key waits, a key seen
	// valid does not, and another address is not affected.
	if v, wait := l.Check("10.0.0.1", key("new")); v != Limited || wait != time.Second {
		t.Fatalf("a new key from the address = %v, %v; want Limited, 1s", v, wait)
	}
	check("10.0.0.1", "valid", Lookup)
	check("10.0.0.2", "new", Lookup)
	// One lookup comes back per second.
	now = now.Add(time.Second)
	check("10.0.0.1", "new", Lookup)
	l.Miss("10.0.0.1", key("new"))
	check("10.0.0.1", "new2", Limited)
	now = now.Add(time.Minute)
	check("10.0.0.1", "wrong0", Lookup)
}

func TestLimiterIsBounded(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := New(func() time.Time { return now }, 0, 0, 100)
	for i := range 1000 {
		l.Miss("10.0."+strconv.Itoa(i), key(strconv.Itoa(i)))
		l.Hit(key("v" + strconv.Itoa(i)))
	}
	if l.addrs.len() > 100 || l.unknown.len() > 100 || l.valid.len() > 100 {
		t.Fatalf("tables hold %d, %d, %d entries; want at most 100 each", l.addrs.len(), l.unknown.len(), l.valid.len())
	}
	if v, _ := l.Check("x", key("999")); v != Unknown {
		t.Error("the latest unknown key was forgotten")
	}
}
