package synth

import (
	"sort"
	"strconv"
	"strings"
)

// inputSchema maps input names to witness positions. Names come from the R1CS
// itself (gnark records every input wire's full name, with "_" between struct
// fields and array indices), so built-in and imported circuits are handled alike.
// The canonical input name replaces gnark's "_" with ".": "Path_3_1" is "Path.3.1".
type inputSchema struct {
	names []string    // canonical name of witness position i (public inputs first)
	root  *schemaNode // nil when the dotted names do not form a tree (see newInputSchema)
	gnark map[string]int
}

// schemaNode is a struct or array of inputs (children set) or one input (leaf >= 0).
type schemaNode struct {
	path     string
	leaf     int
	children map[string]*schemaNode
	isArray  bool // children are exactly "0" .. "n-1"
}

func newInputSchema(public, secret []string) *inputSchema {
	s := &inputSchema{gnark: make(map[string]int, len(public)+len(secret))}
	s.root = &schemaNode{leaf: -1, children: map[string]*schemaNode{}}
	for i, name := range append(append([]string(nil), public...), secret...) {
		dotted := strings.ReplaceAll(name, "_", ".")
		s.names = append(s.names, dotted)
		s.gnark[name] = i
		if s.root != nil && !s.root.insert(dotted, i) {
			// An imported circuit whose field names contain "_" (say "a_b" next to
			// "a") has no consistent dotted tree: only gnark's own names work then.
			s.root = nil
		}
	}
	if s.root != nil {
		s.root.markArrays()
	} else {
		copy(s.names, public)
		copy(s.names[len(public):], secret)
	}
	return s
}

func (n *schemaNode) insert(path string, leaf int) bool {
	node := n
	for _, seg := range strings.Split(path, ".") {
		if node.leaf >= 0 || seg == "" {
			return false
		}
		child, ok := node.children[seg]
		if !ok {
			p := seg
			if node.path != "" {
				p = node.path + "." + seg
			}
			child = &schemaNode{path: p, leaf: -1, children: map[string]*schemaNode{}}
			node.children[seg] = child
		}
		node = child
	}
	if node.leaf >= 0 || len(node.children) > 0 {
		return false
	}
	node.leaf = leaf
	node.children = nil
	return true
}

func (n *schemaNode) markArrays() {
	if n.leaf >= 0 {
		return
	}
	n.isArray = true
	for i := range len(n.children) {
		if _, ok := n.children[strconv.Itoa(i)]; !ok {
			n.isArray = false
			break
		}
	}
	for _, c := range n.children {
		c.markArrays()
	}
}

// describe names the shape expected at n, for error messages.
func (n *schemaNode) describe() string {
	switch {
	case n.leaf >= 0:
		return "a decimal or 0x-hex string"
	case n.isArray:
		return "an array of length " + strconv.Itoa(len(n.children))
	default:
		keys := make([]string, 0, len(n.children))
		for k := range n.children {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if len(keys) > 6 {
			keys = append(keys[:6], "…")
		}
		return "an object with fields " + strings.Join(keys, ", ")
	}
}

// lookup resolves a dotted key below n. When it fails, it returns an error naming
// the full field and, for arrays, the valid index range.
func (n *schemaNode) lookup(key string) (*schemaNode, error) {
	node := n
	for _, seg := range strings.Split(key, ".") {
		full := joinPath(node.path, seg)
		if node.leaf >= 0 {
			return nil, badField(full, "unknown field: %s is a single value", node.path)
		}
		child, ok := node.children[seg]
		if !ok {
			if node.isArray && node.path != "" {
				return nil, badField(full, "unknown field: %s has indices 0..%d", node.path, len(node.children)-1)
			}
			return nil, badField(full, "unknown field")
		}
		node = child
	}
	return node, nil
}

func joinPath(parent, seg string) string {
	if parent == "" {
		return seg
	}
	return parent + "." + seg
}
