package tmuxenv

import (
	"strings"
	"testing"
)

func TestSocket(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"/tmp/tmux-0/default,1234,0", "/tmp/tmux-0/default"},
		{"/tmp/tmux-1000/work,77,3", "/tmp/tmux-1000/work"},
		{"/tmp/sock", "/tmp/sock"},
		{",1,2", ""},
	}
	for _, tt := range tests {
		if got := Socket(tt.in); got != tt.want {
			t.Errorf("Socket(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// FuzzSocket: whatever $TMUX holds, the socket is its start, without a
// comma (the pid and session that follow are never taken for a path).
func FuzzSocket(f *testing.F) {
	for _, s := range []string{"", "/tmp/tmux-0/default,1234,0", "/a,b/c,1,2", ",", "/tmp/sock"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if s := Socket(v); strings.Contains(s, ",") || !strings.HasPrefix(v, s) {
			t.Fatalf("Socket(%q) = %q", v, s)
		}
	})
}

func TestDefaultSocket(t *testing.T) {
	if got, want := DefaultSocket("/x/y", 1000), "/x/y/tmux-1000/default"; got != want {
		t.Errorf("DefaultSocket(/x/y, 1000) = %q, want %q", got, want)
	}
	if got, want := DefaultSocket("", 0), "/tmp/tmux-0/default"; got != want {
		t.Errorf("DefaultSocket without TMUX_TMPDIR = %q, want %q", got, want)
	}
}
