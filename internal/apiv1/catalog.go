package apiv1

// CatalogEntry is one entry of the policy catalog: GET /api/v1/catalog
// lists them, GET /api/v1/catalog/{name} shows one with its YAML.
type CatalogEntry struct {
	Name        string         `json:"name"`
	Version     string         `json:"version"`
	Category    string         `json:"category"`
	Description string         `json:"description"`
	Params      []CatalogParam `json:"params,omitempty"`
	// Installed is, in GET /api/v1/tenants/{tenant}/catalog, the version
	// the tenant has installed; empty when it has none.
	Installed string `json:"installed,omitempty"`
	// YAML is the entry's objects as shipped, in GET /api/v1/catalog/{name}.
	YAML string `json:"yaml,omitempty"`
}

// CatalogParam is one documented key of an entry's ConfigMap param.
type CatalogParam struct {
	ConfigMap   string `json:"configMap"`
	Key         string `json:"key"`
	Default     string `json:"default"`
	Description string `json:"description"`
}

// CatalogInstall is the body of POST
// /api/v1/tenants/{tenant}/catalog/{name}/install; an empty body takes the
// defaults.
type CatalogInstall struct {
	// Action is the bindings' validation action: Deny (the default), Warn
	// or Audit.
	Action string `json:"action,omitempty"`
	// ClusterSelector, when set, is put on every binding as the
	// portcullis.dev/cluster-selector annotation.
	ClusterSelector string `json:"clusterSelector,omitempty"`
}

// CatalogResult answers an install or an upgrade of a catalog entry.
type CatalogResult struct {
	Entry string `json:"entry"`
	// FromVersion is, for an upgrade, the version that was installed.
	FromVersion string `json:"fromVersion,omitempty"`
	ToVersion   string `json:"toVersion"`
	// Diff is, for an upgrade, a unified diff from the installed objects'
	// YAML to the new ones'; empty when nothing changes.
	Diff string `json:"diff,omitempty"`
	ApplyResult
	// Removed are, for an upgrade, installed objects that the new version
	// no longer has: they are deleted.
	Removed []ApplyItem `json:"removed,omitempty"`
}
