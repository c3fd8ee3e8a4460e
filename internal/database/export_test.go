package database

// DashboardReads is dashboardReads for the tests: table to columns, nil
// for the whole table.
func DashboardReads() map[string][]string {
	out := map[string][]string{}
	for _, g := range dashboardReads {
		out[g.table] = g.columns
	}
	return out
}
