// Package web holds the admin UI's templates and static assets. They are
// embedded in the gateway binary, so that the UI needs no other files and
// fetches nothing at run time. Third-party scripts are under static/vendor,
// built by build/build.sh (make web-bundle) from the versions pinned in
// build/package-lock.json, with their licences and SHA256SUMS.
package web

import "embed"

// FS holds templates/*.html and static/**.
//
//go:embed templates static
var FS embed.FS
