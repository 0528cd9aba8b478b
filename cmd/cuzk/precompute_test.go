package main

import "testing"

func TestParsePrecompute(t *testing.T) {
	for _, c := range []struct {
		in      string
		copies  int
		batched bool
		ok      bool
	}{
		{"auto", 16, true, true},
		{"off", 0, false, true},
		{"0", 0, false, true},
		{"2", 2, false, true},
		{"16", 16, false, true},
		{"1", 0, false, false},
		{"17", 0, false, false},
		{"-3", 0, false, false},
		{"", 0, false, false},
		{"Auto", 0, false, false},
		{"16x", 0, false, false},
	} {
		copies, batched, err := parsePrecompute(c.in)
		if (err == nil) != c.ok || copies != c.copies || batched != c.batched {
			t.Errorf("parsePrecompute(%q) = %d, %v, %v; want %d, %v, ok=%v", c.in, copies, batched, err, c.copies, c.batched, c.ok)
		}
	}
}
