package orch

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/tmux"
)

// The restore's phases move only along the arrows of restore's diagram
// (resume.go).
func TestRestorePhases(t *testing.T) {
	arrows := map[[2]restorePhase]bool{
		{phaseWatching, phaseReopening}:  true,
		{phaseReopening, phaseRelinking}: true,
		{phaseReopening, phaseWatching}:  true,
		{phaseRelinking, phaseResuming}:  true,
		{phaseRelinking, phaseWatching}:  true,
		{phaseResuming, phaseWatching}:   true,
		{phaseResuming, phaseReopening}:  true,
	}
	all := []restorePhase{phaseWatching, phaseReopening, phaseRelinking, phaseResuming}
	for _, a := range all {
		for _, b := range all {
			if got := phaseAllowed(a, b); got != arrows[[2]restorePhase{a, b}] {
				t.Errorf("%s -> %s allowed = %v", a, b, got)
			}
		}
	}
}

// A restore's life through the restorer: begin, relations, agents that
// settle one by one; a second restore while agents of the first start
// takes over, and the first's agents find their generation over.
func TestRestorerLife(t *testing.T) {
	rs := newRestorer(t.TempDir())
	if !rs.begin() || rs.phase != phaseReopening || !rs.busy() {
		t.Fatalf("begin: phase %s", rs.phase)
	}
	if rs.begin() {
		t.Error("a second restore began while the first makes sessions")
	}
	rs.to(phaseRelinking)
	g1, g2 := rs.resume("%1"), rs.resume("%2")
	rs.end()
	if rs.phase != phaseResuming || rs.busy() || !rs.isResuming("%1") {
		t.Fatalf("after the relations: phase %s, busy %v", rs.phase, rs.busy())
	}
	if cur, last := rs.settle("%1", g1); !cur || last {
		t.Errorf("first agent settled: current %v last %v", cur, last)
	}
	if rs.phase != phaseResuming || rs.resumingCount() != 1 {
		t.Errorf("one agent still starts: phase %s, %d resuming", rs.phase, rs.resumingCount())
	}
	// The server goes again while %2 starts: a new restore.
	if !rs.begin() {
		t.Fatal("a restore could not begin while agents resume")
	}
	if cur, _ := rs.settle("%2", g2); cur {
		t.Error("an agent of the earlier restore settled in the new one")
	}
	rs.to(phaseRelinking)
	rs.end()
	if rs.phase != phaseWatching {
		t.Errorf("a restore with no agent ends watching, is %s", rs.phase)
	}
	// Nothing to start: relinking straight back to watching.
	rs.begin()
	rs.end()
	if rs.phase != phaseWatching {
		t.Errorf("phase %s", rs.phase)
	}
}

// Each agent's own machine: its pane's look, with its deadline.
func TestJudgeResume(t *testing.T) {
	now := time.Now()
	later, earlier := now.Add(time.Minute), now.Add(-time.Second)
	for _, tc := range []struct {
		name     string
		look     resumeLook
		deadline time.Time
		want     resumeVerdict
		why      string
	}{
		{"still drawing", resumeLook{}, later, resumeStarting, ""},
		{"its box is up", resumeLook{Drawn: true}, later, resumeBack, ""},
		{"resume refused", resumeLook{Exited: true, Status: 1, Said: "No conversation found with session ID: x"}, later, resumeLost,
			"the agent exited as it started again (status 1): No conversation found with session ID: x"},
		{"exited past its deadline", resumeLook{Exited: true, Status: 127}, earlier, resumeLost, "status 127"},
		{"pane closed", resumeLook{Gone: true}, later, resumeLost, "its pane closed"},
		{"alive at its deadline", resumeLook{}, earlier, resumeBack, "no screen of its agent yet"},
	} {
		got, why := judgeResume(tc.look, now, tc.deadline)
		if got != tc.want || !strings.Contains(why, tc.why) {
			t.Errorf("%s: %v %q, want %v %q", tc.name, got, why, tc.want, tc.why)
		}
	}
}

func TestMissingProgram(t *testing.T) {
	dir := t.TempDir()
	if got := missingProgram([]string{"claude", "--resume", "x"}, dir); !strings.Contains(got, "claude is not on st's PATH ("+dir+")") || !strings.Contains(got, "Try:") {
		t.Errorf("missing claude: %q", got)
	}
	if got := missingProgram([]string{"sh"}, "/nowhere:/bin:/usr/bin"); got != "" {
		t.Errorf("sh is on the PATH: %q", got)
	}
	if got := missingProgram([]string{dir + "/nope"}, ""); !strings.Contains(got, "is not there or cannot run") {
		t.Errorf("absolute program missing: %q", got)
	}
	if got := lastWords("\n\nclaude: error\nNo conversation found with session ID: x\n\nPane is dead (status 1, Tue)\n\n"); got != "claude: error / No conversation found with session ID: x" {
		t.Errorf("lastWords = %q", got)
	}
}

// A server of another life (st did not make it) is not judged by the
// picture's pane ids; one st's own restore made is.
func TestOtherLife(t *testing.T) {
	rs := newRestorer(t.TempDir())
	if rs.otherLife("9:9") {
		t.Error("with no picture, every server is st's to look at")
	}
	rs.layout.Server = "1:1"
	if rs.otherLife("1:1") || !rs.otherLife("2:2") || rs.otherLife("") {
		t.Error("the picture's life is known, another is not")
	}
	rs.broughtBack([]string{"%1"})
	if rs.otherLife("2:2") {
		t.Error("a server st's restore made is st's own")
	}
}

// stoppingRunner is the fake server as st's own tmux runner sees it when
// st stops: a command whose context is done fails with the context's
// error, as a tmux process killed by it does.
type stoppingRunner struct{ tmux.Runner }

func (r stoppingRunner) Run(ctx context.Context, args ...string) (string, error) {
	if ctx.Err() != nil {
		return "", fmt.Errorf("tmux %s: %w", args[0], ctx.Err())
	}
	return r.Runner.Run(ctx, args...)
}

// An agent's start again cut short by st's own stop (st down right after
// a restore) writes no state: the worker is not gone "because its agent
// could not come back" when what failed was st's own command, stopped
// with st (issue 32, item 10); it stays starting for the next st to judge
// from its pane.
func TestResumeCutShortByStopWritesNothing(t *testing.T) {
	h := newHarness(t, api.Starting, nil)
	h.m.cfg.Tmux = tmux.NewWithRunner("/tmp/fake.sock", stoppingRunner{h.tm})
	gen := h.m.rest.resume(workerID)
	ctx, stop := context.WithCancel(context.Background())
	stop() // st down, as the agent's start begins
	l := launch{pane: workerID, cwd: "/tmp", kind: "sim", argv: []string{"sh"}, env: map[string]string{"PATH": "/usr/bin:/bin"}}
	h.m.resumeAgent(ctx, l, gen, time.Now())
	h.m.Sync()
	if d := h.onDisk(); d.State != api.Starting || d.Error != "" {
		t.Errorf("run.json after st stopped during the agent's start: %s %q, want starting with no error", d.State, d.Error)
	}
	if v := h.worker(); v.State != api.Starting || v.Error != "" {
		t.Errorf("the worker after st stopped during the agent's start: %s %q, want starting with no error", v.State, v.Error)
	}
}

// A word of the server's going that the watcher reads as st stops (st
// down) restores nothing and judges no worker: every look at the server
// fails then, and a restore judged from those looks retired every
// relation and made every worker gone (issue 32, item 10).
func TestServerGoneAsStStopsJudgesNothing(t *testing.T) {
	h := newHarness(t, api.Working, nil)
	h.m.cfg.Tmux = tmux.NewWithRunner("/tmp/fake.sock", stoppingRunner{h.tm})
	if err := h.m.rest.record(tmux.Layout{Server: "1:1", Sessions: []tmux.LayoutSession{{Name: "main", Windows: []tmux.LayoutWindow{
		{Index: 0, Name: "coord", Panes: []tmux.LayoutPane{{ID: coord, Path: "/tmp"}}},
		{Index: 1, Name: "w1", Panes: []tmux.LayoutPane{{ID: workerID, Path: "/tmp", Options: map[string]string{"@st_agent": "sim"}}}},
	}}}}); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	stop()
	h.m.serverGone(ctx, time.Now().Add(-300*time.Millisecond))
	h.m.Sync()
	if d := h.onDisk(); d.ID != workerID || d.State != api.Working || d.Error != "" {
		t.Errorf("run.json after a going read as st stopped: %s %s %q, want %s working", d.ID, d.State, d.Error, workerID)
	}
}
