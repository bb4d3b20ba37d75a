package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
)

// view is a worker as the daemon answers it.
func view(id, name string, state api.State) api.WorkerView {
	return api.WorkerView{Worker: api.Worker{ID: id, Name: name, Agent: "sim", State: state}, Run: "r-1", For: "12s"}
}

// taskFile is a readable task file in a folder of the test's.
func taskFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "api-tests.md")
	if err := os.WriteFile(p, []byte("Write the API tests.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// waitFor checks a wait request: the pane and ids, and a timeout of the
// --timeout given (less the moments that passed before it was asked).
func waitFor(pane string, ids []string, timeout time.Duration) func(*testing.T, []byte) {
	return func(t *testing.T, body []byte) {
		var r api.WaitRequest
		if err := json.Unmarshal(body, &r); err != nil || r.Pane != pane || len(r.IDs) != len(ids) ||
			r.Timeout > timeout+time.Millisecond || r.Timeout < timeout-10*time.Second {
			t.Errorf("wait asked %s (%v); want pane %s, ids %v, timeout about %s", body, err, pane, ids, timeout)
			return
		}
		for i := range ids {
			if r.IDs[i] != ids[i] {
				t.Errorf("wait asked for %v, want %v", r.IDs, ids)
			}
		}
	}
}

func TestRunWorkerStart(t *testing.T) {
	task := taskFile(t)
	api3, api4 := view("%3", "api-1", api.Working), view("%4", "api-2", api.Working)
	noted := view("%3", "api", api.Working)
	noted.Notes = []string{"docs/** matches no file yet"}
	checkRuns(t, []runCase{{
		name: "start", pane: "%1", args: []string{"worker", "start", "--agent", "sim", "--task", task, "--name", "api", "--owns", "docs/**"},
		answers: map[string]any{api.RouteWorkerStart: noted},
		asked: []asked{{route: api.RouteWorkerStart, req: api.StartRequest{Pane: "%1", Agent: "sim", Task: task, Name: "api",
			Env: map[string]string{"PATH": "/usr/bin:/bin"}, Owns: []string{"docs/**"}}}},
		stdout: "%3 api\n", stderr: "st: note: docs/** matches no file yet\n",
	}, {
		name: "start a fan", pane: "%1", args: []string{"worker", "start", "--agent", "sim", "--task", task, "--name", "api", "--fan", "2"},
		answers: map[string]any{api.RouteWorkerFan: []api.WorkerView{api3, api4}},
		asked: []asked{{route: api.RouteWorkerFan, req: api.StartRequest{Pane: "%1", Agent: "sim", Task: task, Name: "api",
			Env: map[string]string{"PATH": "/usr/bin:/bin"}, Fan: 2}}},
		stdout: "%3 api-1\n%4 api-2\n",
	}, {
		name: "start refused", pane: "%1", args: []string{"worker", "start", "--agent", "claude", "--task", task},
		answers: map[string]any{api.RouteWorkerStart: refusal(api.KindNoHooks, "claude's hooks are not installed, so st cannot see its turns", "st hooks install")},
		asked: []asked{{route: api.RouteWorkerStart, req: api.StartRequest{Pane: "%1", Agent: "claude", Task: task,
			Env: map[string]string{"PATH": "/usr/bin:/bin"}}}},
		code: 1, stderr: "st: claude's hooks are not installed, so st cannot see its turns\nTry: st hooks install\n",
	}, {
		name: "start with no task file", pane: "%1", args: []string{"worker", "start", "--agent", "sim", "--task", task + ".gone"},
		code: 1, stderr: "st: cannot read the task file " + task + ".gone: no such file or directory\n" +
			"Try: write the task into a file the worker can read, and pass its path with --task\n",
	}, {
		name: "start outside tmux", args: []string{"worker", "start", "--agent", "sim", "--task", task},
		code: 1, stderr: notInTmux("st worker start"),
	}})
}

func TestRunWorkerWait(t *testing.T) {
	done := view("%3", "api", api.Done)
	done.Summary = "wrote the API tests\nand more"
	waiting := view("%4", "docs", api.Waiting)
	checkRuns(t, []runCase{{
		name: "all done", pane: "%1", args: []string{"worker", "wait", "--timeout", "5m"},
		answers: map[string]any{api.RouteWorkerWait: api.WaitResult{Workers: []api.WorkerView{done}}},
		asked:   []asked{{route: api.RouteWorkerWait, check: waitFor("%1", nil, 5*time.Minute)}},
		stdout:  "%3  api  done  wrote the API tests …\n",
	}, {
		name: "one needs a person", pane: "%1", args: []string{"worker", "wait", "%3", "%4"},
		answers: map[string]any{api.RouteWorkerWait: api.WaitResult{Workers: []api.WorkerView{done, waiting}}},
		asked:   []asked{{route: api.RouteWorkerWait, check: waitFor("%1", []string{"%3", "%4"}, 15*time.Minute)}},
		code:    2, stdout: "%3  api   done     wrote the API tests …\n%4  docs  waiting  \n",
	}, {
		name: "timed out", pane: "%1", args: []string{"worker", "wait", "--timeout", "2s"},
		answers: map[string]any{api.RouteWorkerWait: api.WaitResult{Workers: []api.WorkerView{view("%3", "api", api.Working)}, TimedOut: true}},
		asked:   []asked{{route: api.RouteWorkerWait, check: waitFor("%1", nil, 2*time.Second)}},
		code:    3, stdout: "%3  api  working  \n", stderr: "st: the timeout (2s) passed before every worker settled\n",
	}, {
		name: "no such worker", pane: "%1", args: []string{"worker", "wait", "nosuch"},
		answers: map[string]any{api.RouteWorkerWait: refusal(api.KindNotFound, "no worker nosuch in this pane's run", "st worker list")},
		asked:   []asked{{route: api.RouteWorkerWait, check: waitFor("%1", []string{"nosuch"}, 15*time.Minute)}},
		code:    1, stderr: "st: no worker nosuch in this pane's run\nTry: st worker list\n",
	}})
}

func TestRunWorker(t *testing.T) {
	read := view("%3", "api", api.Done)
	read.Task, read.Summary, read.LastAnswer = "/w/api-tests.md", "wrote the tests", "All 12 tests pass."
	lead := view("%7", "lead", api.Working)
	lead.Agent, lead.TeamOf = "claude", 2
	bidi := view("%3", "api", api.Done)
	bidi.Summary = "all good \u202edessap stset"
	id := func(pane, id string) api.IDRequest { return api.IDRequest{Pane: pane, ID: id} }
	checkRuns(t, []runCase{{
		name: "read", pane: "%1", args: []string{"worker", "read", "api"},
		answers: map[string]any{api.RouteWorkerRead: read}, asked: []asked{{route: api.RouteWorkerRead, req: id("%1", "api")}},
		stdout: "worker:  %3 api (sim, run r-1)\nstate:   done for 12s\ntask:    /w/api-tests.md\nsummary: wrote the tests\nlast answer:\n  All 12 tests pass.\n",
	}, {
		// A bidi control in a summary would show its end first: shown safely.
		name: "read of a summary with U+202E", pane: "%1", args: []string{"worker", "read", "api"},
		answers: map[string]any{api.RouteWorkerRead: bidi}, asked: []asked{{route: api.RouteWorkerRead, req: id("%1", "api")}},
		stdout: "worker:  %3 api (sim, run r-1)\nstate:   done for 12s\nsummary: all good \uFFFDdessap stset\nlast answer:\n  (none yet)\n",
	}, {
		name: "read refused", pane: "%1", args: []string{"worker", "read", "nosuch"},
		answers: map[string]any{api.RouteWorkerRead: refusal(api.KindNotFound, "no worker nosuch", "st worker list --all")},
		asked:   []asked{{route: api.RouteWorkerRead, req: id("%1", "nosuch")}},
		code:    1, stderr: "st: no worker nosuch\nTry: st worker list --all\n",
	}, {
		name: "send", pane: "%1", args: []string{"worker", "send", "api", "also the docs"},
		answers: map[string]any{api.RouteWorkerSend: read},
		asked:   []asked{{route: api.RouteWorkerSend, req: api.IDRequest{Pane: "%1", ID: "api", Text: "also the docs"}}},
		stdout:  "sent to api (%3)\n",
	}, {
		name: "stop", pane: "%1", args: []string{"worker", "stop", "api", "--yes"},
		answers: map[string]any{api.RouteWorkerStop: read}, asked: []asked{{route: api.RouteWorkerStop, req: id("%1", "api")}},
		stdout: "stopped api (%3)\n",
	}, {
		name: "stop without --yes", pane: "%1", args: []string{"worker", "stop", "api"},
		code: 1, stderr: "st: st worker stop closes the worker's window and ends its agent\nTry: st worker stop api --yes\n",
	}, {
		name: "list", pane: "%1", args: []string{"worker", "list"},
		answers: map[string]any{api.RouteWorkerList: []api.WorkerView{read, lead}}, asked: []asked{{route: api.RouteWorkerList, req: id("%1", "")}},
		stdout: "ID  NAME           AGENT   STATE    FOR  TOKENS  RUN\n%3  api            sim     done     12s  -       r-1\n%7  lead (team 2)  claude  working  12s  -       r-1\n",
	}, {
		name: "list all outside tmux", args: []string{"worker", "list", "--all"},
		answers: map[string]any{api.RouteWorkerList: []api.WorkerView{}}, asked: []asked{{route: api.RouteWorkerList, req: api.IDRequest{All: true}}},
		stdout: "no workers\n",
	}, {
		name: "rename", pane: "%1", args: []string{"worker", "rename", "%3", "tests"},
		answers: map[string]any{api.RouteWorkerRename: view("%3", "tests", api.Working)},
		asked:   []asked{{route: api.RouteWorkerRename, req: api.IDRequest{Pane: "%1", ID: "%3", Text: "tests"}}},
		stdout:  "renamed %3 to tests\n",
	}, {
		name: "release", pane: "%1", args: []string{"worker", "release", "api"},
		answers: map[string]any{api.RouteWorkerRelease: read}, asked: []asked{{route: api.RouteWorkerRelease, req: id("%1", "api")}},
		stdout: "released api (%3) from run r-1: it was told it is no one's worker now; send it no more work\n",
	}, {
		name: "adopt", pane: "%1", args: []string{"worker", "adopt", "%7", "--owns", "web/**"},
		answers: map[string]any{api.RouteWorkerAdopt: lead},
		asked:   []asked{{route: api.RouteWorkerAdopt, req: api.IDRequest{Pane: "%1", ID: "%7", Owns: []string{"web/**"}}}},
		stdout:  "adopted %7 lead (claude, a team of 2) into run r-1\n",
	}, {
		name: "adopt refused", pane: "%1", args: []string{"worker", "adopt", "%1"},
		answers: map[string]any{api.RouteWorkerAdopt: refusal(api.KindUsage, "%1 is this pane: a coordinator cannot adopt itself", "st worker adopt ID of another agent's pane")},
		asked:   []asked{{route: api.RouteWorkerAdopt, req: id("%1", "%1")}},
		code:    1, stderr: "st: %1 is this pane: a coordinator cannot adopt itself\nTry: st worker adopt ID of another agent's pane\n",
	}, {
		name: "offer", pane: "%0", args: []string{"worker", "offer", "%7", "--machine", "ci-mac"},
		answers: map[string]any{api.RouteWorkerOffer: api.OfferView{Pane: "%7", Agent: "claude", Machine: "ci-mac-1", MachineName: "ci-mac"}},
		asked:   []asked{{route: api.RouteWorkerOffer, req: api.OfferRequest{Pane: "%0", ID: "%7", Machine: "ci-mac"}}},
		stdout:  "%7 (claude) is offered to ci-mac: its coordinator may adopt it with st worker adopt <this machine>/%7\n",
	}, {
		name: "offer withdrawn", pane: "%0", args: []string{"worker", "offer", "%7", "--withdraw"},
		answers: map[string]any{api.RouteWorkerOffer: api.OfferView{Pane: "%7", Withdrawn: true}},
		asked:   []asked{{route: api.RouteWorkerOffer, req: api.OfferRequest{Pane: "%0", ID: "%7", Withdraw: true}}},
		stdout:  "%7 is offered to no machine now\n",
	}, {
		name: "done refused", pane: "%3", args: []string{"worker", "done", "--summary", "did it"},
		answers: map[string]any{api.RouteWorkerDone: refusal(api.KindNotFound, "%3 is no worker of st's", "run st worker done in the pane of a worker st started")},
		asked:   []asked{{route: api.RouteWorkerDone, req: api.DoneRequest{Pane: "%3", Summary: "did it"}}},
		code:    1, stderr: "st: %3 is no worker of st's\nTry: run st worker done in the pane of a worker st started\n",
	}})
}

func TestRunWorkerTree(t *testing.T) {
	w := view("%3", "api", api.Done)
	w.Worktree = &api.WorktreeInfo{Path: "/r/.st/api", Branch: "st/api"}
	w.Scope = &api.Scope{Globs: []string{"api/**"}}
	id := api.IDRequest{Pane: "%1", ID: "api"}
	checkRuns(t, []runCase{{
		name: "diff", pane: "%1", args: []string{"worker", "diff", "api"},
		answers: map[string]any{api.RouteWorkerDiff: api.DiffResult{Worker: w, Changes: []api.Change{{Path: "api/a_test.go", Status: "added"}, {Path: "README.md", Status: "modified"}},
			Outside: []string{"README.md"}, Diff: "diff --git a/README.md b/README.md\n"}},
		asked: []asked{{route: api.RouteWorkerDiff, req: id}},
		stdout: "worker api (%3): 2 file(s) changed on st/api\n  added     api/a_test.go\n  modified  README.md\n" +
			"outside its scope (api/**): README.md\ndiff --git a/README.md b/README.md\n",
	}, {
		name: "merge", pane: "%1", args: []string{"worker", "merge", "api"},
		answers: map[string]any{api.RouteWorkerMerge: api.MergeResult{Worker: w, Commit: "3f2a9c1", Files: []string{"api/a_test.go"}}},
		asked:   []asked{{route: api.RouteWorkerMerge, req: id}},
		stdout:  "merged api (%3): 1 file(s), commit 3f2a9c1\n",
	}, {
		name: "pick", pane: "%1", args: []string{"worker", "pick", "api"},
		answers: map[string]any{api.RouteWorkerPick: api.MergeResult{Worker: w, Commit: "3f2a9c1", Files: []string{"api/a_test.go"}, Removed: []string{"api-2", "api-3"}}},
		asked:   []asked{{route: api.RouteWorkerPick, req: id}},
		stdout:  "merged api (%3): 1 file(s), commit 3f2a9c1\nremoved the other tries: api-2, api-3\n",
	}, {
		// Its branch had nothing the checkout lacks: no commit id to show.
		name: "merge of nothing", pane: "%1", args: []string{"worker", "merge", "api"},
		answers: map[string]any{api.RouteWorkerMerge: api.MergeResult{Worker: w, Files: []string{}}},
		asked:   []asked{{route: api.RouteWorkerMerge, req: id}},
		stdout:  "nothing to merge: api (%3) has no change that the checkout does not have already\n",
	}, {
		name: "merge refused", pane: "%1", args: []string{"worker", "merge", "api"},
		answers: map[string]any{api.RouteWorkerMerge: refusal(api.KindConflict, "api's branch does not merge cleanly: README.md", "st worker diff api, then merge it by hand")},
		asked:   []asked{{route: api.RouteWorkerMerge, req: id}},
		code:    1, stderr: "st: api's branch does not merge cleanly: README.md\nTry: st worker diff api, then merge it by hand\n",
	}})
}
