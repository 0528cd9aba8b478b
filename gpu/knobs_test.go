package gpu

import "testing"

// TestKnobsCheck: a window width is 0 (the library's choice) or within the library's
// range, for each group on its own; the check runs before any stream is touched.
func TestKnobsCheck(t *testing.T) {
	for _, tc := range []struct {
		k  Knobs
		ok bool
	}{
		{Knobs{}, true},
		{Knobs{MSMWindowG1: MinMSMWindow, MSMWindowG2: MaxMSMWindow}, true},
		{Knobs{MSMWindowG1: 16}, true},
		{Knobs{MSMWindowG1: MinMSMWindow - 1}, false},
		{Knobs{MSMWindowG2: MaxMSMWindow + 1}, false},
		{Knobs{MSMWindowG1: 16, MSMWindowG2: -1}, false},
	} {
		if err := tc.k.check(); (err == nil) != tc.ok {
			t.Errorf("%+v: check() = %v, want ok %v", tc.k, err, tc.ok)
		}
	}
	if MinMSMWindow != 4 || MaxMSMWindow != 22 {
		t.Errorf("window range %d..%d, want the library's 4..22", MinMSMWindow, MaxMSMWindow)
	}
}
