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
