package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sophonz/st/internal/api"
)

// st statusline passes the user's own status line through byte for byte
// with its exit status, whether st runs or not, and hands st the JSON for
// its pane only when it is an object within the cap.
func TestRunStatusLine(t *testing.T) {
	payload := `{"session_id":"s","cost":{"total_cost_usd":0.42},"model":{"display_name":"Opus ✻"}}`
	// The user's command: what it read, then bytes that are no text,
	// no newline at the end, and a status of its own.
	user := `cat; printf '\377 [end]'; echo to-stderr >&2; exit 3`
	big := `{"x":"` + strings.Repeat("b", api.MaxStatusLineBytes) + `"}`
	for _, c := range []struct {
		name, stdin string
		args        []string
		up, pane    bool
		wantOut     string
		wantCode    int
		handed      bool
	}{
		{"st up, in a pane", payload, []string{"statusline", "--then", user}, true, true, payload + "\xff [end]", 3, true},
		{"--then=", payload, []string{"statusline", "--then=" + user}, true, true, payload + "\xff [end]", 3, true},
		{"st down", payload, []string{"statusline", "--then", user}, false, true, payload + "\xff [end]", 3, false},
		{"in no pane", payload, []string{"statusline", "--then", user}, true, false, payload + "\xff [end]", 3, false},
		{"not JSON", "not json", []string{"statusline", "--then", user}, true, true, "not json\xff [end]", 3, false},
		{"past the cap", big, []string{"statusline", "--then", user}, true, true, big + "\xff [end]", 3, false},
		{"no command of the user's", payload, []string{"statusline"}, true, true, "", 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := newFakeDaemon(t, map[string]any{api.RouteStatusLine: struct{}{}})
			if c.up {
				d.start()
			}
			r := &stRun{d: d, vars: d.inPaneVars("%4"), stdin: c.stdin}
			if !c.pane {
				delete(r.vars, "TMUX_PANE")
			}
			code := r.run(c.args...)
			if code != c.wantCode || !bytes.Equal([]byte(r.stdout.String()), []byte(c.wantOut)) {
				t.Fatalf("exit %d, stdout %q; want %d, %q", code, r.stdout.String(), c.wantCode, c.wantOut)
			}
			if c.wantCode != 0 && !strings.Contains(r.stderr.String(), "to-stderr") {
				t.Fatalf("stderr %q: the user's stderr went", r.stderr.String())
			}
			calls := d.taken()
			if !c.handed {
				if len(calls) != 0 {
					t.Fatalf("st was asked %v", d.routes())
				}
				return
			}
			if len(calls) != 1 {
				t.Fatalf("st was asked %v, want one status line", d.routes())
			}
			got := decodeAs(t, calls[0].Body, api.HookRequest{}).(api.HookRequest)
			if got.Pane != "%4" || got.Agent != "claude" || string(got.Payload) != payload {
				t.Fatalf("st got %+v", got)
			}
		})
	}
}

func TestStatusLineArgs(t *testing.T) {
	for _, c := range []struct {
		args []string
		then string
		ok   bool
	}{
		{nil, "", true},
		{[]string{"--then", "echo hi"}, "echo hi", true},
		{[]string{"--then=echo hi"}, "echo hi", true},
		{[]string{"--then"}, "", false},
		{[]string{"echo"}, "", false},
		{[]string{"--then", "a", "b"}, "", false},
	} {
		o, ok := statusLineArgs(c.args)
		if ok != c.ok || o.Then != c.then {
			t.Errorf("%q: %+v %v, want %q %v", c.args, o, ok, c.then, c.ok)
		}
	}
}
