package tenancy

import "time"

// SetClock makes a read the time from now instead of the wall clock, so that
// a test moves past an expiry or the usage throttle without sleeping.
func (a *Authenticator) SetClock(now func() time.Time) { a.now = now }
