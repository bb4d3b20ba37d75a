package real

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/testutil"
)

// TestGeminiQuestionWaits: a real Gemini CLI worker whose model calls its
// question tool, ask_user (which asks even in the rig's yolo mode), waits
// at its "Answer Questions" dialog. st says the worker is waiting, with a
// question item that holds the question and its options (from Gemini's
// Notification hook), and types nothing over the dialog; a person answers
// Yes in the window, the model gets that answer, and the worker reports
// done. ST_COMPAT_KIND=gemini runs it on another Gemini version
// (ST_REAL_GEMINI_BIN).
func TestGeminiQuestionWaits(t *testing.T) {
	if !slices.Contains(kinds(t), "gemini") {
		t.Skip("ST_COMPAT_KIND names another agent: this is Gemini CLI's question")
	}
	r := newRig(t)
	r.installHooks()
	const id = "q-gemini"
	// In a task file, so the question keeps its "?" (Gemini drops one
	// typed into its empty box in one burst).
	task := r.writeTask(id+".md", "ASK: Which colour should the button be?\nRUN: "+r.st+" worker done --summary \"asked which colour\"\nSAY: painted.\n")
	start := time.Now()
	r.stMust("worker", "start", "--agent", "gemini", "--task", task, "--name", id)
	if o, e, code := r.st1("worker", "wait", id, "--timeout", "90s"); code != 2 || !strings.Contains(o, "waiting") {
		t.Fatalf("wait: exit %d\n%s%s\n%s", code, o, e, r.capture("main:"+id))
	}
	t.Logf("waiting %.1f s after the start", time.Since(start).Seconds())
	item := openItemOf(t, r, id)
	if item.Kind != "question" || !strings.Contains(item.Text, "Which colour should the button be?") ||
		!slices.Contains(item.Options, "Yes") || !slices.Contains(item.Options, "No") {
		t.Errorf("the item at the question: %+v\n%s", item, r.capture("main:"+id))
	}
	// The hook comes before the dialog is drawn.
	testutil.WaitFor(t, 30*time.Second, func() (bool, string) {
		s := r.capture("main:" + id)
		return strings.Contains(s, "Answer Questions"), "Gemini's question dialog is not on its screen:\n" + s
	})
	// st never types over the dialog.
	if _, e, code := r.st1("worker", "send", id, "typed over the question"); code == 0 || !strings.Contains(e, "prompt") {
		t.Errorf("send during the question: exit %d %s", code, e)
	}
	// A person picks the first option, Yes, in the window.
	r.tmuxMust("send-keys", "-t", "main:"+id, "Enter")
	answeredAt := time.Now()
	deadline := time.Now().Add(90 * time.Second)
	for r.read(id).State != "done" {
		if time.Now().After(deadline) {
			t.Fatalf("the worker never got done:\n%s\n%s", r.capture("main:"+id), r.daemonLog())
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("done %.1f s after the answer", time.Since(answeredAt).Seconds())
	if s := r.capture("main:" + id); strings.Contains(s, "typed over the question") {
		t.Errorf("the line went into the window:\n%s", s)
	}
	answered := false
	for _, q := range r.fake.Requests() {
		answered = answered || strings.Contains(string(q.Body), `{\"answers\":{\"0\":\"Yes\"}}`)
	}
	if !answered {
		t.Errorf("the model never got the answer Yes")
	}
	if items := r.stMust("attention", "--json"); strings.Contains(items, `"name": "`+id+`"`) {
		t.Errorf("an item of the worker is still open once it is done:\n%s", items)
	}
}

// TestGeminiSendWithQuestionMark: st worker send types a line with a "!"
// and a "?" into a Gemini CLI worker's empty box, and the model gets it
// whole. Typed in one burst, Gemini took the "!" for its shell mode and
// the "?" for its shortcuts' help and dropped both; st then found a line
// in the box it had not typed and refused to go on (Screen.FirstAlone).
func TestGeminiSendWithQuestionMark(t *testing.T) {
	if !slices.Contains(kinds(t), "gemini") {
		t.Skip("ST_COMPAT_KIND names another agent: this is Gemini CLI's box")
	}
	r := newRig(t)
	r.installHooks()
	const id = "qm-gemini"
	task := r.writeTask(id+".md", "SAY: first answer.\n")
	r.stMust("worker", "start", "--agent", "gemini", "--task", task, "--name", id)
	testutil.WaitFor(t, 90*time.Second, func() (bool, string) {
		return r.read(id).State == "idle", "the worker never got idle:\n" + r.capture("main:"+id)
	})
	const line = "Good! Is it blue? Or green? SAY: second-answer"
	start := time.Now()
	if o, e, code := r.st1("worker", "send", id, line); code != 0 {
		t.Fatalf("send: exit %d\n%s%s\n%s\n%s", code, o, e, r.capture("main:"+id), r.daemonLog())
	}
	t.Logf("send took %.1f s", time.Since(start).Seconds())
	testutil.WaitFor(t, 60*time.Second, func() (bool, string) {
		var got []string
		for _, q := range r.fake.Requests() {
			if q.Prompt == line {
				return true, ""
			}
			got = append(got, q.Prompt)
		}
		return false, "the model never got the line whole; its prompts: " + strings.Join(got, " | ")
	})
}
