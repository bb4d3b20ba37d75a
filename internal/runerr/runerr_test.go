package runerr

import "testing"

func TestMessage(t *testing.T) {
	for _, c := range []struct {
		args   []string
		stderr string
		code   int
		want   string
	}{
		{[]string{"merge", "x"}, "CONFLICT (content)\n", 1, "git merge: CONFLICT (content)"},
		{nil, "", 2, "git: exit status 2"},
		{[]string{"status"}, "  \n", 128, "git status: exit status 128"},
	} {
		if got := Message("git", c.args, c.stderr, c.code); got != c.want {
			t.Errorf("Message(%q, %q, %d) = %q, want %q", c.args, c.stderr, c.code, got, c.want)
		}
	}
}
