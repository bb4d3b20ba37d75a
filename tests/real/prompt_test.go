package real

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/testutil"
)

// TestRealCodexPromptAnsweredByAPerson (issue 34, item 3): a real Codex
// 0.171.0 worker, offline, asks to run a command outside its sandbox;
// its PermissionRequest hook (st's) waits for a person, who answers in
// st's web UI (its API, as the page posts it, with st web's link): Allow
// once -> the command ran and Codex never drew its own dialog; Deny -> it
// did not run. Nothing is typed into its pane.
func TestRealCodexPromptAnsweredByAPerson(t *testing.T) {
	r := newRig(t)
	r.installHooks()
	// The rig's person is away from the web UI (2 s); this one waits.
	r.stMust("down")
	r.env = append(r.env, "ST_PERMISSION_WAIT=5m")
	r.stMust("up")
	link := regexp.MustCompile(`http://127\.0\.0\.1:\d+/\S*token=\S+`).FindString(r.stMust("web"))
	if link == "" {
		t.Fatal("st web printed no link")
	}
	base, token := link[:strings.Index(link, "/st/")], link[strings.Index(link, "token=")+len("token="):]
	for _, c := range []struct{ name, answer string }{{"allowed", "allow"}, {"denied", "deny"}} {
		file := "codex-" + c.name + ".txt"
		task := r.writeTask("p-"+c.name+".md", fmt.Sprintf("ESCALATE RUN: echo yes > %s\nSAY: asked.\n", file))
		id := "x-" + c.name
		r.stMust("worker", "start", "--agent", "codex", "--task", task, "--name", id)
		// The prompt, as the page gets it.
		var prompt struct{ ID, Pane, Command string }
		testutil.WaitFor(t, 120*time.Second, func() (bool, string) {
			var s struct {
				Prompts []struct{ ID, Pane, Command string }
			}
			body := webDo(t, "GET", base+"/st/api/state?token="+token, nil)
			json.Unmarshal(body, &s)
			for _, p := range s.Prompts {
				if strings.Contains(p.Command, file) {
					prompt = p
				}
			}
			return prompt.ID != "", "no prompt in the web UI's state:\n" + r.capture("main:"+id) + "\n" + r.daemonLog()
		})
		if s := r.capture("main:" + id); strings.Contains(s, "Would you like to run") {
			t.Errorf("%s: Codex drew its own dialog while st's hook waited:\n%s", c.name, s)
		}
		webDo(t, "POST", base+"/st/api/prompts/answer?token="+token, map[string]string{"id": prompt.ID, "option": c.answer})
		// Its turn ends with the fake model's answer.
		testutil.WaitFor(t, 90*time.Second, func() (bool, string) {
			s := r.capture("main:" + id)
			return strings.Contains(s, "• asked."), c.name + ": the turn never ended:\n" + s
		})
		_, err := os.Stat(filepath.Join(r.work(), file))
		if ran := err == nil; ran != (c.answer == "allow") {
			t.Errorf("%s: the command ran: %v\n%s", c.name, ran, r.capture("main:"+id))
		}
		if s := r.capture("main:" + id); strings.Contains(s, "Would you like to run") {
			t.Errorf("%s: Codex drew its own dialog:\n%s", c.name, s)
		}
	}
}

// webDo asks st's web UI, as its page does, and returns the body of a 200.
func webDo(t *testing.T, method, url string, body any) []byte {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	out, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("%s %s: %d %s", method, url, res.StatusCode, out)
	}
	return out
}

// TestClaudeEscAtPromptClosesItsItem (issue 34): a person presses Esc at
// a real Claude 2.1.332's permission prompt, and at its AskUserQuestion.
// Claude fires no hook for it (reference §3.6; the hooks of every event a
// person could expect are logged here to show it), takes the dialog away
// and puts its box back. The worker's item stays open while the dialog is
// on the screen, and closes once it is gone (st reads the box back,
// twice, after the hooks went quiet): st attention no longer lists it,
// the worker is idle, and the command did not run. No item comes back.
func TestClaudeEscAtPromptClosesItsItem(t *testing.T) {
	r := newRig(t)
	r.installHooks()
	hookLog := filepath.Join(r.dir, "esc-hooks.log")
	askBeforeBash(t, r, hookLog)
	ad := mustAdapter(t, "claude")
	for _, c := range []struct{ name, task, kind, what string }{
		{"permission", "RUN: echo yes > esc-perm.txt\nSAY: ran it.\n", "permission", "esc-perm.txt"},
		{"question", "ASK: Which colour should the button be?\nSAY: thanks\n", "question", "Which colour"},
	} {
		id := "esc-" + c.name
		r.stMust("worker", "start", "--agent", "claude", "--task", r.writeTask(id+".md", c.task), "--name", id)
		if o, e, code := r.st1("worker", "wait", id, "--timeout", "90s"); code != 2 || !strings.Contains(o, "waiting") {
			t.Fatalf("%s: wait: exit %d\n%s%s\n%s", c.name, code, o, e, r.capture("main:"+id))
		}
		item := openItemOf(t, r, id)
		if string(item.Kind) != c.kind || !strings.Contains(item.Text+item.Command, c.what) {
			t.Fatalf("%s: the item at the prompt: %+v", c.name, item)
		}
		// The dialog stays up past the hooks' quiet time and st's two
		// looks (1 s + 2 x 0.5 s): the item stays open meanwhile.
		testutil.WaitFor(t, 30*time.Second, func() (bool, string) {
			return screenStable(r, id, ad, 3*time.Second), "no dialog held on the screen:\n" + r.capture("main:"+id)
		})
		if it := openItemOf(t, r, id); it.ID != item.ID {
			t.Fatalf("%s: with the dialog on screen the item changed: %+v, was %+v\n%s", c.name, it, item, r.daemonLog())
		}
		mark := logSize(hookLog)
		if before := logSince(hookLog, 0); !strings.Contains(before, "UserPromptSubmit") {
			t.Fatalf("the logging hooks did not run (before Esc: %q): the log below would prove nothing", before)
		}
		r.tmuxMust("send-keys", "-t", "main:"+id, "Escape")
		esc := time.Now()
		testutil.WaitFor(t, 30*time.Second, func() (bool, string) {
			return r.read(id).State == "idle" && !hasOpenItem(t, r, id, c.kind),
				fmt.Sprintf("%s: after Esc, state %s, items:\n%s\n%s", c.name, r.read(id).State, r.stMust("attention"), r.capture("main:"+id))
		})
		took := time.Since(esc)
		fmt.Printf("FIGURE esc_to_item_closed_%s %.0f ms\n", c.name, float64(took.Microseconds())/1000)
		if v := r.view(id, ad); v.Screen != agent.ScreenTyped && v.Screen != agent.ScreenReady {
			t.Errorf("%s: Claude's screen after Esc: %v\n%s", c.name, v.Screen, r.capture("main:"+id))
		}
		// Past Claude's Notification time (about 6 s after the dialog
		// showed) no item of the prompt came back.
		time.Sleep(7 * time.Second)
		if hasOpenItem(t, r, id, c.kind) {
			t.Errorf("%s: an item of the prompt is open again after Esc:\n%s", c.name, r.stMust("attention"))
		}
		t.Logf("%s: hooks that fired after Esc (Claude's own, logged): %q", c.name, logSince(hookLog, mark))
		r.stMust("worker", "stop", id, "--yes")
	}
	if _, err := os.Stat(filepath.Join(r.work(), "esc-perm.txt")); err == nil {
		t.Errorf("the command refused with Esc ran")
	}
}

// askBeforeBash makes Claude ask before a Bash command other than st's
// own, and logs the events a person's Esc might fire (Claude merges these
// with st's hooks) in log, one name a line.
func askBeforeBash(t *testing.T, r *rig, log string) {
	t.Helper()
	settings := filepath.Join(r.home, ".claude", "settings.json")
	data, err := os.ReadFile(settings)
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	s["permissions"] = map[string]any{"allow": []string{"Bash(" + r.st + ":*)"}}
	hooks := s["hooks"].(map[string]any)
	for _, ev := range []string{"Stop", "StopFailure", "PermissionDenied", "PostToolUseFailure", "Notification", "UserPromptSubmit", "PostToolUse"} {
		list, _ := hooks[ev].([]any)
		hooks[ev] = append(list, map[string]any{"hooks": []any{map[string]any{"type": "command", "command": "echo " + ev + " >> " + log}}})
	}
	out, _ := json.MarshalIndent(s, "", "  ")
	if err := os.WriteFile(settings, out, 0o600); err != nil {
		t.Fatal(err)
	}
}

func logSize(path string) int {
	data, _ := os.ReadFile(path)
	return len(data)
}

func logSince(path string, from int) string {
	data, _ := os.ReadFile(path)
	if from > len(data) {
		return ""
	}
	return string(data[from:])
}

// openItemOf is the open attention item of worker name (fails without).
func openItemOf(t *testing.T, r *rig, name string) api.Attention {
	t.Helper()
	var l api.AttentionList
	testutil.WaitFor(t, 30*time.Second, func() (bool, string) {
		out := r.stMust("attention", "--json")
		l = api.AttentionList{}
		json.Unmarshal([]byte(out), &l)
		for _, a := range l.Items {
			if a.Name == name {
				return true, ""
			}
		}
		return false, "no open item of " + name + ":\n" + out
	})
	for _, a := range l.Items {
		if a.Name == name {
			return a
		}
	}
	return api.Attention{}
}

// hasOpenItem reports whether worker name has an open item of kind.
func hasOpenItem(t *testing.T, r *rig, name, kind string) bool {
	t.Helper()
	var l api.AttentionList
	if err := json.Unmarshal([]byte(r.stMust("attention", "--json")), &l); err != nil {
		t.Fatal(err)
	}
	for _, a := range l.Items {
		if a.Name == name && string(a.Kind) == kind {
			return true
		}
	}
	return false
}
