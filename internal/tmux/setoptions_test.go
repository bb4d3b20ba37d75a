package tmux

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// recordRunner keeps every command it is given and answers nothing.
type recordRunner struct{ calls [][]string }

func (r *recordRunner) Run(ctx context.Context, args ...string) (string, error) {
	r.calls = append(r.calls, append([]string(nil), args...))
	return "", nil
}

// TestSetOptionsSplitsLongChains: 101 panes of a restore once made one
// command line that tmux refused ("command too long"), and every worker
// then counted as gone. Each call must stay under the limit, and every
// option must still be set once.
func TestSetOptionsSplitsLongChains(t *testing.T) {
	rr := &recordRunner{}
	c := NewWithRunner("/tmp/fake.sock", rr)
	opts := map[string]map[string]string{}
	for i := 0; i < 200; i++ {
		opts[fmt.Sprintf("%%%d", i)] = map[string]string{"@st_run": "run-abcdef", "@st_role": "worker", "@st_parent": "%0",
			"@st_name": fmt.Sprintf("worker-%d", i), "@st_agent": "claude", "@st_agent_session": "0b7c2a4e-1111-2222-3333-444455556666"}
	}
	if err := c.SetOptions(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	if len(rr.calls) < 2 {
		t.Fatalf("one call of %d options: it would be too long for tmux", 200*6)
	}
	seen := map[string]int{}
	for _, args := range rr.calls {
		n := 0
		for _, a := range args {
			n += len(a) + 1
		}
		if n > 16000 {
			t.Errorf("a call of %d bytes: tmux takes at most one 16 KiB message", n)
		}
		if args[0] == ";" || args[len(args)-1] == ";" {
			t.Errorf("a call starts or ends with ';': %q", args[:3])
		}
		cmds := strings.Split(strings.Join(args, "\x00"), "\x00;\x00")
		for _, cmd := range cmds {
			f := strings.Split(cmd, "\x00")
			if len(f) != 6 || f[0] != "set-option" {
				t.Fatalf("not a set-option: %q", f)
			}
			seen[f[3]+" "+f[4]]++
			if opts[f[3]][f[4]] != f[5] {
				t.Errorf("%s %s = %q, want %q", f[3], f[4], f[5], opts[f[3]][f[4]])
			}
		}
	}
	if len(seen) != 200*6 {
		t.Errorf("%d options set, want %d", len(seen), 200*6)
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("%s set %d times", k, n)
		}
	}
}
