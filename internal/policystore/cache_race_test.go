package policystore

import "testing"

// A load that read version 3 and finishes after the notification of version
// 5 must not leave version 3 in force until the next resync: installing it
// queues a refresh.
func TestInstallBehindNotifiedVersionQueuesRefresh(t *testing.T) {
	c, err := NewCache(nil, CacheConfig{})
	if err != nil {
		t.Fatal(err)
	}
	c.notified("7:5") // not cached yet: only remembered
	if len(c.refresh) != 0 {
		t.Fatal("refresh queued for a tenant that is not cached")
	}
	c.install(&Snapshot{TenantID: 7, Version: 3})
	if len(c.refresh) != 1 || <-c.refresh != 7 {
		t.Fatal("installing a version older than the notified one queued no refresh")
	}
	c.install(&Snapshot{TenantID: 7, Version: 5})
	if len(c.refresh) != 0 {
		t.Fatal("installing the notified version queued a refresh")
	}
	c.notified("7:4") // an older notification arriving late changes nothing
	if len(c.refresh) != 0 || c.behind(7, 5) {
		t.Fatal("a late, older notification made the cache look behind")
	}
}
