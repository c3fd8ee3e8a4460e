package tenancy

import "time"

// SetClock makes a read the time from now instead of the wall clock, so that
// a test moves past an expiry or the usage throttle without sleeping.
func (a *Authenticator) SetClock(now func() time.Time) { a.now = now }

// BasicVerifications is how many argon2id verifications a has run.
func (a *Authenticator) BasicVerifications() int64 { return a.slow.verified.Load() }

// HoldBasicSlots takes every global verification slot until release is
// called, so that a test can queue verifications behind them.
func (a *Authenticator) HoldBasicSlots() (release func()) {
	n := cap(a.slow.global)
	for range n {
		a.slow.global <- struct{}{}
	}
	return func() {
		for range n {
			<-a.slow.global
		}
	}
}

// BasicFlights is how many verifications run or wait, abandoned ones
// included until their goroutine ends.
func (a *Authenticator) BasicFlights() int {
	a.slow.mu.Lock()
	defer a.slow.mu.Unlock()
	n := 0
	for _, tg := range a.slow.tenants {
		n += tg.flights
	}
	return n
}
