// Package tools pins the developer tools the Makefile runs, in a module of
// their own so the product's go.mod stays lean. Run them with
// `go -C tools tool NAME` or build them into ../bin.
package tools
