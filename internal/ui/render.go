package ui

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/portcullis-dev/portcullis/web"
)

// pages are the parsed templates: one set per page, each holding the
// layout and the page's own templates.
type pages struct {
	sets   map[string]*template.Template
	static http.Handler
	// assets maps a static file's name to its URL with a content hash, so
	// that browsers may cache it for good and never run a stale script.
	assets map[string]string
}

func loadPages() (*pages, error) {
	ps := &pages{sets: map[string]*template.Template{}, assets: map[string]string{}}
	static, err := fs.Sub(web.FS, "static")
	if err != nil {
		return nil, err
	}
	err = fs.WalkDir(static, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(static, name)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		ps.assets[name] = "/ui/static/" + name + "?v=" + hex.EncodeToString(sum[:8])
		return nil
	})
	if err != nil {
		return nil, err
	}
	files := http.StripPrefix("/ui/static/", http.FileServerFS(static))
	ps.static = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("v") != "" {
			w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		}
		files.ServeHTTP(w, r)
	})
	funcs := template.FuncMap{
		"asset": func(name string) (string, error) {
			u, ok := ps.assets[name]
			if !ok {
				return "", fmt.Errorf("no static file %q", name)
			}
			return u, nil
		},
		"seg":  url.PathEscape,
		"time": formatTime,
		"ago":  ago,
		"json": func(v any) (string, error) {
			b, err := json.Marshal(v)
			return string(b), err
		},
		"join":    strings.Join,
		"strings": func(xs ...string) []string { return xs },
		"tpath": func(tenant string, parts ...string) string {
			s := "/ui/t/" + url.PathEscape(tenant)
			for _, p := range parts {
				s += "/" + url.PathEscape(p)
			}
			return s
		},
		// link is path with a query of key, value pairs (empty values
		// left out). A URL is built whole here: html/template would escape
		// a query's = and & written after a literal ?.
		"link": func(path string, kv ...string) string {
			q := url.Values{}
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i+1] != "" {
					q.Set(kv[i], kv[i+1])
				}
			}
			if len(q) == 0 {
				return path
			}
			return path + "?" + q.Encode()
		},
		"withQuery": func(path, query string) string { return path + "?" + query },
	}
	base, err := template.New("").Funcs(funcs).ParseFS(web.FS, "templates/layout.html", "templates/partials.html")
	if err != nil {
		return nil, err
	}
	names, err := fs.Glob(web.FS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		name := strings.TrimSuffix(path.Base(n), ".html")
		if name == "layout" || name == "partials" {
			continue
		}
		set, err := template.Must(base.Clone()).ParseFS(web.FS, n)
		if err != nil {
			return nil, err
		}
		ps.sets[name] = set
	}
	return ps, nil
}

// render executes one template of a page into a buffer first, so that a
// template error becomes a clean 500 instead of half a page.
func (ps *pages) render(w http.ResponseWriter, code int, page, name string, v *view) error {
	set, ok := ps.sets[page]
	if !ok {
		return fmt.Errorf("no page template %q", page)
	}
	var buf bytes.Buffer
	if err := set.ExecuteTemplate(&buf, name, v); err != nil {
		return fmt.Errorf("render %s/%s: %w", page, name, err)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, err := w.Write(buf.Bytes())
	return err
}

func formatTime(t any) string {
	switch t := t.(type) {
	case time.Time:
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	case *time.Time:
		if t == nil {
			return ""
		}
		return formatTime(*t)
	}
	return ""
}

func ago(t any) string {
	var tt time.Time
	switch v := t.(type) {
	case time.Time:
		tt = v
	case *time.Time:
		if v == nil {
			return "never"
		}
		tt = *v
	}
	if tt.IsZero() {
		return "never"
	}
	d := time.Since(tt)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h ago", int(d.Hours()))
	}
	return fmt.Sprintf("%d days ago", int(d.Hours()/24))
}
