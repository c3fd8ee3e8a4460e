package ui

import (
	"bytes"
	"errors"
	"io"
	"regexp"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// fieldPart is one step of a field path: a map key or a list index.
var fieldPart = regexp.MustCompile(`^(?:\.?([^.\[\]]+)|\[(\d+)\])`)

// fieldLine finds the line of the YAML text at which an apply error's
// field (documents[i].spec.validations[0].expression) is, or 0. Every
// document's root is indexed, in order; a field path that leaves the
// text (a missing field) stops at the deepest node that exists.
func fieldLine(text []byte, field string) int {
	if field == "" {
		return 0
	}
	var docs []*yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(text))
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0
		}
		docs = append(docs, &n)
	}
	var cur *yaml.Node
	rest := field
	if m := regexp.MustCompile(`^documents\[(\d+)\]`).FindStringSubmatch(rest); m != nil {
		i, _ := strconv.Atoi(m[1])
		if i >= len(docs) {
			return 0
		}
		cur, rest = docs[i], rest[len(m[0]):]
	} else if len(docs) == 1 {
		cur = docs[0]
	} else {
		return 0
	}
	if cur.Kind == yaml.DocumentNode && len(cur.Content) > 0 {
		cur = cur.Content[0]
	}
	line := cur.Line
	for rest != "" {
		m := fieldPart.FindStringSubmatch(rest)
		if m == nil {
			break
		}
		rest = rest[len(m[0]):]
		next, keyLine := step(cur, m[1], m[2])
		if keyLine > 0 {
			line = keyLine
		}
		if next == nil {
			break
		}
		cur = next
	}
	return line
}

// step goes one field down from n, returning the node and the line of the
// key (or item) that leads to it.
func step(n *yaml.Node, key, index string) (*yaml.Node, int) {
	switch {
	case index != "" && n.Kind == yaml.SequenceNode:
		i, _ := strconv.Atoi(index)
		if i < len(n.Content) {
			return n.Content[i], n.Content[i].Line
		}
	case key != "" && n.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				return n.Content[i+1], n.Content[i].Line
			}
		}
	}
	return nil, 0
}
