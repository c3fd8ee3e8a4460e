package ui

import "net/url"

// confirmation is the page that asks before a destructive change when the
// browser did not ask already (app.js asks with a dialog and then sends
// confirmed=yes; without JavaScript this page is the dialog).
type confirmation struct {
	Question string
	Action   string
	Button   string
	Fields   url.Values
	Back     string
}

// confirmed reports whether the user confirmed the change; if not, it has
// rendered the question, and the handler must stop.
func (r *request) confirmed(question, button, back string) (bool, error) {
	if r.r.PostFormValue("confirmed") == "yes" {
		return true, nil
	}
	fields := url.Values{}
	for k, vs := range r.r.PostForm {
		if k != csrfField && k != "confirmed" {
			fields[k] = vs
		}
	}
	return false, r.page("confirm", r.view("Confirm", "", confirmation{Question: question, Action: r.r.URL.RequestURI(),
		Button: button, Fields: fields, Back: back}))
}
