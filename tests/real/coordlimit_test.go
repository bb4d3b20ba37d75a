package real

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/testutil/realagent"
)

// coordLimitFor is how long the fake model keeps the coordinator at its
// usage limit, from its first request at it: the clock starts at that
// request, so a slow start takes none of it, and st has time to be seen
// showing it paused.
const coordLimitFor = 20

// TestCoordinatorAtItsLimit (issue 35 §3: "a coordinator at its limit is
// handled the same way"): a real Claude coordinator, a subscriber with
// its own going on turned off (autoContinueAtUsageLimit false), reaches
// its usage limit, which resets a few seconds later. st orch show, its
// JSON, st status and st attention say it is paused until the reset;
// after the reset st types continue once into the coordinator's box (past
// Claude's limit menu), its UserPromptSubmit confirms it, the turn
// finishes its script, the item closes, and the model was asked to go on
// exactly once.
func TestCoordinatorAtItsLimit(t *testing.T) {
	if !hasKind(t, "claude") {
		t.Skip("Claude is not in this run")
	}
	r := newRigWith(t, subscriberEnv)
	r.installHooks()
	realagent.MergeClaudeSettings(t, r.home, map[string]any{"autoContinueAtUsageLimit": false})
	r.coordAtLimit(t, "claude", r.claude)
	if n := continuesAsked(t, r.fake.Requests(), "LIMIT: "+strconv.Itoa(coordLimitFor)); n != 1 {
		t.Errorf("the model was asked to go on %d times, want 1:\n%s", n, r.fakeLog())
	}
}

// TestCodexCoordinatorAtItsLimit: the same with a real Codex coordinator,
// which fires no hook at its limit: st reads the limit from its rollout
// when its turn goes quiet, shows it paused, and after the reset types
// continue once its composer is up; nothing goes into a modal (its model
// is never switched).
func TestCodexCoordinatorAtItsLimit(t *testing.T) {
	if !hasKind(t, "codex") {
		t.Skip("Codex is not in this run")
	}
	r := newRig(t)
	r.installHooks()
	r.coordAtLimit(t, "codex", r.codex+" --no-daemon")
	n := 0
	for _, q := range r.fake.Requests() {
		if strings.HasPrefix(q.Endpoint, "/v1/responses") && q.Model != "" && q.Model != "gpt-fake" {
			t.Errorf("Codex asked with model %q: a line went into its model-switch modal", q.Model)
		}
		if !q.Side && q.Limited.IsZero() && strings.TrimSpace(q.Prompt) == "continue" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the model was asked %d times after a continue, want 1:\n%s", n, r.fakeLog())
	}
}

// TestClaudeCoordinatorGoesOnByItself: a real Claude coordinator, a
// subscriber with its own going on left on (the default), reaches its
// usage limit, which resets a few seconds later. st orch show says when
// Claude will go on by itself and when st would type if not; Claude goes
// on by itself 30-90 s after the reset (reference §13), st confirms it in
// its log and types nothing, the turn finishes, and the model was asked
// to go on exactly once, by Claude.
func TestClaudeCoordinatorGoesOnByItself(t *testing.T) {
	if !hasKind(t, "claude") {
		t.Skip("Claude is not in this run")
	}
	r := newRigWith(t, subscriberEnv)
	r.installHooks()
	coord := r.startCoordinator(t, "claude", r.claude)
	r.submitLine(t, "claude", "coord", "Plan the work. LIMIT: 5 SAY: The plan went on.")
	r.waitCoordShown(t, coord, regexp.MustCompile(`(?m)^  paused \(usage limit, resets ~?\d\d:\d\d; claude goes on by itself \d\d:\d\d:\d\d-\d\d:\d\d:\d\d, st types continue at \d\d:\d\d:\d\d if not\)$`), "The plan went on.")
	for deadline := time.Now().Add(240 * time.Second); !answered(r, "The plan went on."); time.Sleep(time.Second) {
		if time.Now().After(deadline) {
			t.Fatalf("the coordinator never went on:\n%s\n%s\n%s", r.capture("main:coord"), r.daemonLog(), r.fakeLog())
		}
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(300 * time.Millisecond) {
		show, _, _ := r.stIn(coord, "orch", "show")
		if !strings.Contains(show, "paused") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still paused after Claude went on:\n%s\n%s", show, r.daemonLog())
		}
	}
	full, _ := os.ReadFile(filepath.Join(r.stHome, "daemon.log"))
	if strings.Contains(string(full), `typing "continue"`) {
		t.Errorf("st typed continue while Claude went on by itself:\n%s", full)
	}
	if m := regexp.MustCompile(`coordinator ` + regexp.QuoteMeta(coord) + ` of run-[0-9a-f]+: claude went on by itself after its usage limit[^\n]*`).Find(full); m == nil {
		t.Errorf("st did not confirm that Claude went on by itself:\n%s", full)
	} else {
		t.Logf("st's log: %s", m)
	}
	screen, _ := r.tmux("capture-pane", "-p", "-S", "-", "-t", "main:coord")
	if regexp.MustCompile(`(?m)^\s*❯ continue\s*$`).MatchString(screen) {
		t.Errorf("a continue was typed into the coordinator's box:\n%s", screen)
	}
	if n := continuesAsked(t, r.fake.Requests(), "LIMIT: 5 SAY: The plan went on."); n != 1 {
		t.Errorf("the model was asked to go on %d times, want 1:\n%s", n, r.fakeLog())
	}
}

// coordAtLimit runs an agent of kind (its command line) as a run's
// coordinator, has it reach its usage limit, checks that st shows it
// paused, waits for its turn to go on after the reset and finish, and
// checks that st typed continue once and the item closed.
func (r *rig) coordAtLimit(t *testing.T, kind, command string) {
	t.Helper()
	coord := r.startCoordinator(t, kind, command)
	r.submitLine(t, kind, "coord", "Plan the work. LIMIT: "+strconv.Itoa(coordLimitFor)+" SAY: The plan is made.")
	r.waitCoordShown(t, coord, regexp.MustCompile(`(?m)^  paused \(usage limit, resets ~?\d\d:\d\d\)$`), "The plan is made.")
	r.checkCoordShownPaused(t, coord, kind)

	// After the reset: st types continue once, and the turn finishes.
	for deadline := time.Now().Add(180 * time.Second); !answered(r, "The plan is made."); time.Sleep(300 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the coordinator's turn never went on:\n%s\n%s\n%s", r.capture("main:coord"), r.daemonLog(), r.fakeLog())
		}
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(300 * time.Millisecond) {
		show, _, _ := r.stIn(coord, "orch", "show")
		att := r.stMust("attention")
		if !strings.Contains(show, "paused") && !strings.Contains(att, "paused") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still paused after its turn went on:\n%s%s\n%s", show, att, r.daemonLog())
		}
	}
	if att := r.stMust("attention", "--all"); !regexp.MustCompile(`(?m)^att-\d+ +paused \(closed: agent\)`).MatchString(att) {
		t.Errorf("the coordinator's paused item did not close as its agent went on:\n%s", att)
	}
	full, _ := os.ReadFile(filepath.Join(r.stHome, "daemon.log"))
	if n := strings.Count(string(full), `typing "continue"`); n != 1 {
		t.Errorf("st typed continue %d times, want 1:\n%s", n, full)
	}
	for _, l := range strings.Split(string(full), "\n") {
		if strings.Contains(l, "coordinator "+coord+" ") {
			t.Logf("st's log: %s", l)
		}
	}
	screen, _ := r.tmux("capture-pane", "-p", "-S", "-", "-t", "main:coord")
	if n := len(regexp.MustCompile(`(?m)^\s*[❯›] continue\s*$`).FindAllString(screen, -1)); n != 1 {
		t.Errorf("%d continues in the coordinator's window, want 1:\n%s", n, screen)
	}
}

// startCoordinator starts an agent of kind (its command line) in window
// coord, and makes it a run's coordinator (st orch start in its pane); it
// returns its pane.
func (r *rig) startCoordinator(t *testing.T, kind, command string) string {
	t.Helper()
	r.tmuxMust("new-window", "-d", "-t", "main:", "-n", "coord", "-c", r.work(), command)
	waitScreen(t, r, "coord", mustAdapter(t, kind), 120*time.Second)
	coord := strings.TrimSpace(r.tmuxMust("display-message", "-p", "-t", "main:coord", "#{pane_id}"))
	if o, e, code := r.stIn(coord, "orch", "start", "--objective", "plan at the limit"); code != 0 {
		t.Fatalf("st orch start in the coordinator's pane: exit %d %s%s", code, o, e)
	}
	return coord
}

// waitCoordShown polls st orch show in the coordinator's pane until it
// matches shown; the fake model answering say first (the turn went on
// before st was seen to pause it) fails the test.
func (r *rig) waitCoordShown(t *testing.T, coord string, shown *regexp.Regexp, say string) {
	t.Helper()
	deadline := time.Now().Add(120 * time.Second)
	for {
		show, _, _ := r.stIn(coord, "orch", "show")
		if shown.MatchString(show) {
			return
		}
		if answered(r, say) || time.Now().After(deadline) {
			t.Fatalf("the coordinator was never shown paused (%s):\n%s\n%s\n%s\n%s", shown, show, r.capture("main:coord"), r.daemonLog(), r.fakeLog())
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// checkCoordShownPaused checks what st says of the paused coordinator in
// pane coord: its run's JSON (st goes on: Claude's own going on is off,
// and Codex has none),
// st status, and an open attention item.
func (r *rig) checkCoordShownPaused(t *testing.T, coord, kind string) {
	t.Helper()
	out, e, code := r.stIn(coord, "orch", "show", "--json")
	var v struct {
		Pause *struct {
			Reason, By string
			Exact      bool
		} `json:"coordinator_pause"`
		Agent string `json:"coordinator_agent"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v.Pause == nil || v.Pause.Reason != "usage limit" || v.Pause.By != "st" || v.Agent != kind {
		t.Errorf("st orch show --json: exit %d %s%s", code, out, e)
	}
	status := r.stMust("status")
	if !regexp.MustCompile(`(?m)^  coordinator ` + regexp.QuoteMeta(coord) + ` \(` + kind + `, run-[0-9a-f]+\): paused \(usage limit, resets ~?\d\d:\d\d\)$`).MatchString(status) {
		t.Errorf("st status does not say the coordinator is paused:\n%s", status)
	}
	att := r.stMust("attention")
	if !regexp.MustCompile(`(?m)^att-\d+ +paused .*` + regexp.QuoteMeta(coord)).MatchString(att) {
		t.Errorf("no open paused item for the coordinator:\n%s", att)
	}
}

// submitLine types line into window's box as a person does, and presses
// Enter until the fake model has been asked it (Claude drops an Enter
// that follows the text at once, Codex takes it as part of a paste).
func (r *rig) submitLine(t *testing.T, kind, window, line string) {
	t.Helper()
	r.tmuxMust("send-keys", "-t", "main:"+window, "-l", line)
	ad := mustAdapter(t, kind)
	deadline := time.Now().Add(90 * time.Second)
	for {
		for _, q := range r.fake.Requests() {
			if strings.Contains(q.Prompt, line) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the model was never asked %q:\n%s", line, r.capture("main:"+window))
		}
		if r.view(window, ad).Screen == agentTyped() {
			r.tmux("send-keys", "-t", "main:"+window, "Enter")
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// answered reports whether the fake model answered say.
func answered(r *rig, say string) bool {
	for _, q := range r.fake.Requests() {
		if q.Answer == say {
			return true
		}
	}
	return false
}
