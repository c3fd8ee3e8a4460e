package api

import (
	"sync"

	"github.com/portcullis-dev/portcullis/internal/fault"
)

// DefaultDecisionSearches is how many decision searches (lists and stats)
// a tenant may have running at once on one replica when
// Server.DecisionSearches is zero. A search may scan a day of a busy
// tenant's partitions; four at once keep one tenant's dashboards and
// scripts from taking every database connection.
const DefaultDecisionSearches = 4

// searchSlots counts each tenant's running decision searches. The zero
// value is ready.
type searchSlots struct {
	mu      sync.Mutex
	running map[int64]int
}

// acquire takes one of tenant's max slots; false when all are taken.
func (s *searchSlots) acquire(tenant int64, max int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running == nil {
		s.running = map[int64]int{}
	}
	if s.running[tenant] >= max {
		return false
	}
	s.running[tenant]++
	return true
}

func (s *searchSlots) release(tenant int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running[tenant]--; s.running[tenant] <= 0 {
		delete(s.running, tenant)
	}
}

// searching runs search in one of the call's tenant's decision search
// slots (the fleet-wide routes share tenant 0's), or answers 429 with
// Retry-After at once: a search waits on no other.
func (s *Server) searching(c *call, search func() error) error {
	max := s.DecisionSearches
	if max <= 0 {
		max = DefaultDecisionSearches
	}
	if !s.searches.acquire(c.tenant.ID, max) {
		c.w.Header().Set("Retry-After", "1")
		who := "the fleet"
		if c.tenant.ID != 0 {
			who = "tenant " + c.tenant.Name
		}
		return fault.Errorf(fault.TooManyRequests, "%s already has %d decision searches running on this replica, its limit; retry in a second", who, max)
	}
	defer s.searches.release(c.tenant.ID)
	return search()
}
