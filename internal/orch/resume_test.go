package orch

import (
	"strings"
	"testing"
	"time"
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
