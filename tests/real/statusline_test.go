package real

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/hooks"
	"github.com/sophonz/st/internal/testutil"
	"github.com/sophonz/st/internal/testutil/fakemodel"
	"github.com/sophonz/st/internal/testutil/realagent"
)

// TestRealStatusLineCostAndNearLimit (issue 35): a real Claude Code, a
// claude.ai subscriber offline, with st's status line installed over the
// user's own (which keeps what it was given). The fake model's answers
// say 92 % of the 5-hour limit and 40 % of the 7-day one are used. Claude
// runs its status line in the worker's tmux pane: st worker list --json
// shows the cost Claude put in it (the same figure the user's own status
// line was given), as the agent's, not an estimate; st status says the
// claude account is near its 5-hour limit, and not its 7-day one, and
// names the account as its $HOME/.claude.json does (a signed-in user's
// oauthAccount, which Claude keeps there: the status line's
// transcript_path is under $HOME/.claude).
func TestRealStatusLineCostAndNearLimit(t *testing.T) {
	if !slices.Contains(kinds(t), "claude") {
		t.Skip("claude is not in this run's kinds (ST_COMPAT_KIND)")
	}
	r := newRigWith(t, subscriberEnv)
	signedIn(t, filepath.Join(r.home, ".claude.json"), "ann@example.com")
	five := time.Now().Add(3 * time.Hour).Truncate(time.Minute)
	r.fake.SetUsed(fakemodel.Used{FiveHour: 0.92, SevenDay: 0.4, FiveHourResets: five, SevenDayResets: time.Now().Add(72 * time.Hour)})
	r.installHooks()
	seen := filepath.Join(r.dir, "user-statusline")
	settings := filepath.Join(r.home, ".claude", "settings.json")
	data, err := os.ReadFile(settings)
	if err != nil {
		t.Fatal(err)
	}
	// The user's own status line: keeps each JSON it is given, prints a
	// line of its own.
	user := fmt.Sprintf(`mkdir -p %s && cat > %s/$(date +%%s%%N).json && printf 'my line'`, seen, seen)
	withUser := strings.Replace(string(data), `"theme": "dark",`, `"theme": "dark", "statusLine": {"type": "command", "command": `+jsonString(user)+`},`, 1)
	if err := os.WriteFile(settings, []byte(withUser), 0o600); err != nil {
		t.Fatal(err)
	}
	sl := hooks.InstallStatusLine(hooks.Options{Home: r.home, St: r.st, Getenv: func(k string) string {
		if k == "HOME" {
			return r.home
		}
		return ""
	}})
	if sl.Error != "" || !sl.Current || sl.User != user {
		t.Fatalf("installing st's status line: %+v", sl)
	}

	task := r.writeTask("sl.md", fmt.Sprintf("Count the files.\nRUN: ls > /dev/null\nRUN: %s worker done --summary \"counted\"\nSAY: I counted them.\n", r.st))
	if o, e, code := r.st1("worker", "start", "--agent", "claude", "--task", task, "--name", "sl"); code != 0 {
		t.Fatalf("st worker start: exit %d %s%s\n%s\n%s", code, o, e, r.capture("main:sl"), r.daemonLog())
	}
	if o, e, code := r.st1("worker", "wait", "sl", "--timeout", "150s"); code != 0 || !strings.Contains(o, "done") {
		t.Fatalf("st worker wait: exit %d %s%s\n%s\n%s", code, o, e, r.capture("main:sl"), r.daemonLog())
	}
	// What Claude gave its status line last, and what st shows.
	var last statusLineSeen
	var shown string
	testutil.WaitFor(t, 60*time.Second, func() (bool, string) {
		last = lastStatusLine(seen)
		shown = r.stMust("worker", "list", "--json")
		return last.Cost > 0 && strings.Contains(shown, fmt.Sprintf(`"cost_usd": %v,`, last.Cost)) && strings.Contains(shown, `"cost_by": "agent"`),
			fmt.Sprintf("Claude's status line got %+v; st worker list --json:\n%s\n%s\n%s", last, shown, r.capture("main:sl"), r.daemonLog())
	})
	if strings.Contains(shown, `"cost_estimated": true`) {
		t.Errorf("the agent's cost is marked an estimate:\n%s", shown)
	}
	if !last.FiveHour {
		t.Errorf("Claude's status line had no rate_limits.five_hour (a subscriber's): %+v", last)
	}
	status := r.stMust("status")
	want := `(?m)^  near a limit: claude \(ann@example\.com\): 5-hour limit 92 % used, resets ` + regexp.QuoteMeta(five.Local().Format("15:04")) + `$`
	if !regexp.MustCompile(want).MatchString(status) || strings.Contains(status, "7-day") {
		t.Errorf("st status does not say the 5-hour limit alone is near (%s):\n%s", want, status)
	}
	screen := r.capture("main:sl")
	t.Logf("Claude ran its status line %d times; the last cost $%v, rate_limits %s; the screen shows the user's line: %v", last.Runs, last.Cost, last.Limits, strings.Contains(screen, "my line"))
	if !strings.Contains(screen, "my line") {
		t.Errorf("the user's own status line is not on Claude's screen:\n%s", screen)
	}
}

// signedIn adds a claude.ai login's oauthAccount to the .claude.json at
// path, as Claude writes it when a person signs in (offline, Claude has
// no profile server to fetch it from).
func signedIn(t *testing.T, path, email string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{}
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["oauthAccount"] = map[string]any{"accountUuid": "5e0c9b7a-0000-4000-8000-000000000001", "emailAddress": email,
		"organizationUuid": "5e0c9b7a-0000-4000-8000-000000000002", "organizationName": email + "'s Organization"}
	out, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
}

// statusLineSeen is what the user's status line was given last.
type statusLineSeen struct {
	Runs     int
	Cost     float64
	FiveHour bool
	// Limits is the last rate_limits as Claude wrote it, for the log.
	Limits json.RawMessage
}

func lastStatusLine(dir string) statusLineSeen {
	ents, _ := os.ReadDir(dir)
	var s statusLineSeen
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		s.Runs++
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		var p struct {
			Cost struct {
				Total float64 `json:"total_cost_usd"`
			} `json:"cost"`
			RateLimits json.RawMessage `json:"rate_limits"`
		}
		if err != nil || json.Unmarshal(data, &p) != nil {
			continue
		}
		// (Names sort by time: the last read is the last run.)
		var rl struct {
			FiveHour *struct {
				Used float64 `json:"used_percentage"`
			} `json:"five_hour"`
		}
		_ = json.Unmarshal(p.RateLimits, &rl)
		s.Cost, s.FiveHour, s.Limits = p.Cost.Total, rl.FiveHour != nil, p.RateLimits
	}
	return s
}

func jsonString(s string) string { b, _ := json.Marshal(s); return string(b) }

// TestRealCodexNearLimit (issue 35): a real Codex worker whose answers
// carry the x-codex-primary-* and -secondary-* headers of an account with
// 92 % of its 5-hour limit and 40 % of its 7-day one used: Codex writes
// them into its rollout's token_count, st reads them with its tokens, and
// st status says the codex account is near its 5-hour limit alone; the
// account is the ChatGPT login its CODEX_HOME's auth.json names (Codex
// works offline with it beside a model provider of its own, measured).
func TestRealCodexNearLimit(t *testing.T) {
	if !slices.Contains(kinds(t), "codex") {
		t.Skip("codex is not in this run's kinds (ST_COMPAT_KIND)")
	}
	r := newRig(t)
	five := time.Now().Add(3 * time.Hour).Truncate(time.Minute)
	r.fake.SetUsed(fakemodel.Used{FiveHour: 0.92, SevenDay: 0.4, FiveHourResets: five, SevenDayResets: time.Now().Add(72 * time.Hour)})
	r.installHooks()
	chatGPTLogin(t, realagent.CodexDir(r.home), "bo@example.com")
	task := r.writeTask("cx.md", fmt.Sprintf("Count the files.\nRUN: ls > /dev/null\nRUN: %s worker done --summary \"counted\"\nSAY: I counted them.\n", r.st))
	if o, e, code := r.st1("worker", "start", "--agent", "codex", "--task", task, "--name", "cx"); code != 0 {
		t.Fatalf("st worker start: exit %d %s%s\n%s\n%s", code, o, e, r.capture("main:cx"), r.daemonLog())
	}
	if o, e, code := r.st1("worker", "wait", "cx", "--timeout", "150s"); code != 0 || !strings.Contains(o, "done") {
		t.Fatalf("st worker wait: exit %d %s%s\n%s\n%s", code, o, e, r.capture("main:cx"), r.daemonLog())
	}
	want := regexp.MustCompile(`(?m)^  near a limit: codex \(bo@example\.com\): 5-hour limit 92 % used, resets ` +
		regexp.QuoteMeta(five.Local().Format("15:04")) + `$`)
	var status string
	testutil.WaitFor(t, 30*time.Second, func() (bool, string) {
		status = r.stMust("status")
		return want.MatchString(status), fmt.Sprintf("st status does not say %s:\n%s\n%s", want, status, r.daemonLog())
	})
	if strings.Contains(status, "7-day") {
		t.Errorf("st status says the 7-day limit (40 %%) is near:\n%s", status)
	}
}

// TestRealTwoClaudeAccounts (issue 35): two Claude Code logins on one
// machine, the default one ($HOME/.claude, signed in as ann in
// $HOME/.claude.json) and a second in CLAUDE_CONFIG_DIR (signed in as bo
// in its own .claude.json), each running a worker: Claude writes the
// second's transcript under CLAUDE_CONFIG_DIR, both status lines say
// 92 % of the 5-hour limit, and st status says so once per account.
func TestRealTwoClaudeAccounts(t *testing.T) {
	if !slices.Contains(kinds(t), "claude") {
		t.Skip("claude is not in this run's kinds (ST_COMPAT_KIND)")
	}
	r := newRigWith(t, subscriberEnv)
	five := time.Now().Add(3 * time.Hour).Truncate(time.Minute)
	r.fake.SetUsed(fakemodel.Used{FiveHour: 0.92, SevenDay: 0.4, FiveHourResets: five, SevenDayResets: time.Now().Add(72 * time.Hour)})
	r.installHooks()
	if sl := hooks.InstallStatusLine(hooks.Options{Home: r.home, St: r.st, Getenv: func(k string) string {
		if k == "HOME" {
			return r.home
		}
		return ""
	}}); sl.Error != "" || !sl.Current {
		t.Fatalf("installing st's status line: %+v", sl)
	}
	signedIn(t, filepath.Join(r.home, ".claude.json"), "ann@example.com")
	// The second login: the same settings (st's hooks and status line),
	// its own .claude.json.
	work := filepath.Join(r.dir, "claude-work")
	if err := os.MkdirAll(work, 0o700); err != nil {
		t.Fatal(err)
	}
	for from, to := range map[string]string{
		filepath.Join(r.home, ".claude", "settings.json"): filepath.Join(work, "settings.json"),
		filepath.Join(r.home, ".claude.json"):             filepath.Join(work, ".claude.json"),
	} {
		data, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	signedIn(t, filepath.Join(work, ".claude.json"), "bo@example.com")

	task := r.writeTask("acc.md", fmt.Sprintf("Count the files.\nRUN: ls > /dev/null\nRUN: %s worker done --summary \"counted\"\nSAY: I counted them.\n", r.st))
	start := func(name string, env []string) {
		t.Helper()
		var out, errb strings.Builder
		cmd := r.stCmd(env, "worker", "start", "--agent", "claude", "--task", task, "--name", name)
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("st worker start %s: %v %s%s\n%s", name, err, out.String(), errb.String(), r.daemonLog())
		}
	}
	start("ann", r.env)
	start("bo", append(append([]string{}, r.env...), "CLAUDE_CONFIG_DIR="+work))
	for _, name := range []string{"ann", "bo"} {
		if o, e, code := r.st1("worker", "wait", name, "--timeout", "150s"); code != 0 || !strings.Contains(o, "done") {
			t.Fatalf("st worker wait %s: exit %d %s%s\n%s\n%s", name, code, o, e, r.capture("main:"+name), r.daemonLog())
		}
	}
	if got, _ := filepath.Glob(filepath.Join(work, "projects", "*", "*.jsonl")); len(got) != 1 {
		t.Errorf("Claude with CLAUDE_CONFIG_DIR wrote %d transcripts under it (%v), want its one", len(got), got)
	}
	at := regexp.QuoteMeta(five.Local().Format("15:04"))
	want := []*regexp.Regexp{
		regexp.MustCompile(`(?m)^  near a limit: claude \(ann@example\.com\): 5-hour limit 92 % used, resets ` + at + `$`),
		regexp.MustCompile(`(?m)^  near a limit: claude \(bo@example\.com\): 5-hour limit 92 % used, resets ` + at + `$`),
	}
	var status string
	testutil.WaitFor(t, 30*time.Second, func() (bool, string) {
		status = r.stMust("status")
		return want[0].MatchString(status) && want[1].MatchString(status),
			fmt.Sprintf("st status does not say both accounts are near their 5-hour limit:\n%s\n%s", status, r.daemonLog())
	})
	if n := strings.Count(status, "near a limit:"); n != 2 {
		t.Errorf("st status has %d near-limit lines, want one per account:\n%s", n, status)
	}
}

// chatGPTLogin writes codexHome/auth.json as a ChatGPT sign-in leaves it
// (the form Codex 0.171.0 takes as one: codex login status says "Logged
// in using ChatGPT"), its id_token unsigned, naming email.
func chatGPTLogin(t *testing.T, codexHome, email string) {
	t.Helper()
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	claims := map[string]any{"email": email, "exp": time.Now().Add(24 * time.Hour).Unix(),
		"https://api.openai.com/auth": map[string]any{"chatgpt_account_id": "acct-test", "chatgpt_plan_type": "plus"}}
	jwt := enc(map[string]any{"alg": "none", "typ": "JWT"}) + "." + enc(claims) + ".c2ln"
	auth := map[string]any{"auth_mode": "chatgpt", "OPENAI_API_KEY": nil, "last_refresh": time.Now().UTC().Format(time.RFC3339),
		"tokens": map[string]any{"id_token": jwt, "access_token": jwt, "refresh_token": "offline", "account_id": "acct-test"}}
	data, err := json.Marshal(auth)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(codexHome, "auth.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
}
