package api

import "testing"

func TestPaneOf(t *testing.T) {
	for in, want := range map[string]string{"%4": "%4", "%4~mx4egnk7": "%4", "": "", "alpha/%3~x": "alpha/%3"} {
		if got := PaneOf(in); got != want {
			t.Errorf("PaneOf(%q) = %q, want %q", in, got, want)
		}
	}
}
