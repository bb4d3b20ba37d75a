package api

import "testing"

func TestPaneOf(t *testing.T) {
	for in, want := range map[string]string{"%4": "%4", "%4~mx4egnk7": "%4", "": "", "alpha/%3~x": "alpha/%3"} {
		if got := PaneOf(in); got != want {
			t.Errorf("PaneOf(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSplitRemote(t *testing.T) {
	for in, want := range map[string][3]string{
		"beta/%4":   {"beta", "%4", "ok"},
		"beta/name": {"beta", "name", "ok"},
		"%4":        {"", "", ""},
		"/%4":       {"", "", ""},
		"beta/":     {"", "", ""},
		"%4~mx4abc": {"", "", ""},
	} {
		m, r, ok := SplitRemote(in)
		if m != want[0] || r != want[1] || ok != (want[2] == "ok") || IsRemote(in) != ok {
			t.Errorf("SplitRemote(%q) = %q %q %v, want %v", in, m, r, ok, want)
		}
	}
	if !Retired("%4~mx4abc") || Retired("%4") {
		t.Error("Retired")
	}
}
