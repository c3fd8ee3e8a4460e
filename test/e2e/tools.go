//go:build tools

// Package e2e pins the kube-apiserver command in go.mod: the test builds it
// as a binary (see apiserver_test.go), so no Go file imports it.
package e2e

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
