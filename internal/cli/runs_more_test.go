package cli

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
)

func TestRunOrch(t *testing.T) {
	on := true
	created := time.Date(2026, 12, 1, 9, 30, 0, 0, time.Local)
	w := view("%3", "api", api.Done)
	w.Parent, w.Summary = "%1", "wrote the tests"
	checkRuns(t, []runCase{{
		name: "start", pane: "%1", args: []string{"orch", "start", "--objective", "API tests and README"},
		answers: map[string]any{api.RouteOrchStart: api.Run{ID: "r-1", Objective: "API tests and README", Coordinator: "%1"}},
		asked:   []asked{{route: api.RouteOrchStart, req: api.StartRunRequest{Pane: "%1", Objective: "API tests and README"}}},
		stdout:  "r-1\n",
	}, {
		name: "start refused", pane: "%1", args: []string{"orch", "start"},
		answers: map[string]any{api.RouteOrchStart: refusal(api.KindConflict, "%1 coordinates run r-1 already", "st orch show r-1")},
		asked:   []asked{{route: api.RouteOrchStart, req: api.StartRunRequest{Pane: "%1"}}},
		code:    1, stderr: "st: %1 coordinates run r-1 already\nTry: st orch show r-1\n",
	}, {
		name: "start outside tmux", args: []string{"orch", "start"},
		code: 1, stderr: notInTmux("st orch start"),
	}, {
		name: "show", args: []string{"orch", "show", "r-1"},
		answers: map[string]any{api.RouteOrchShow: api.RunView{Run: api.Run{ID: "r-1", Coordinator: "%1", Created: created}, Views: []api.WorkerView{w}}},
		asked:   []asked{{route: api.RouteOrchShow, req: api.IDRequest{ID: "r-1"}}},
		stdout: "run:         r-1\nobjective:   (none given)\ncoordinator: %1\nstarted:     2026-12-01 09:30:00\nworkers:\n" +
			"  ID  NAME  AGENT  STATE  FOR  PARENT  TOKENS  SUMMARY\n  %3  api   sim    done   12s  %1      -       wrote the tests\n",
	}, {
		name: "accept-remote on", pane: "%1", args: []string{"orch", "accept-remote", "on"},
		answers: map[string]any{api.RouteAcceptRemote: api.AcceptRemoteStatus{On: true, SignedIn: true, Machine: "ci-mac", Account: "acme", Addr: "127.0.0.2:7767"}},
		asked:   []asked{{route: api.RouteAcceptRemote, req: api.AcceptRemoteRequest{On: &on, Pane: "%1"}}},
		stdout: "accept-remote on: this machine takes workers from the account's other machines\n" +
			"machine ci-mac of account acme, taking requests on 127.0.0.2:7767 and through the control plane's relay\n",
	}, {
		name: "accept-remote refused to an agent", pane: "%3", args: []string{"orch", "accept-remote", "on"},
		answers: map[string]any{api.RouteAcceptRemote: refusal(api.KindUsage, "only a person turns accept-remote on; %3 runs an agent", "run it in your own shell")},
		asked:   []asked{{route: api.RouteAcceptRemote, req: api.AcceptRemoteRequest{On: &on, Pane: "%3"}}},
		code:    1, stderr: "st: only a person turns accept-remote on; %3 runs an agent\nTry: run it in your own shell\n",
	}})
}

func TestRunTask(t *testing.T) {
	task := taskFile(t)
	tv := func(state api.TaskState, reason string) api.TaskView {
		return api.TaskView{Task: api.Task{Name: "api", Agent: "sim", State: state, Reason: reason}, Run: "r-1", For: "3s"}
	}
	running := tv(api.TaskRunning, "")
	running.Worker, running.WorkerName = "%3", "api"
	env := map[string]string{"PATH": "/usr/bin:/bin"}
	checkRuns(t, []runCase{{
		name: "create", pane: "%1", args: []string{"task", "create", "api", "--task", task, "--agent", "sim", "--deps", "schema,fixtures"},
		answers: map[string]any{api.RouteTaskCreate: tv(api.TaskWaiting, "waiting on schema, fixtures")},
		asked: []asked{{route: api.RouteTaskCreate, req: api.TaskRequest{Pane: "%1", Name: "api", File: task, Agent: "sim",
			Deps: []string{"schema", "fixtures"}, Env: env}}},
		stdout: "task api: waiting on schema, fixtures\n",
	}, {
		name: "create starts it", pane: "%1", args: []string{"task", "create", "api", "--task", task, "--agent", "sim"},
		answers: map[string]any{api.RouteTaskCreate: running},
		asked:   []asked{{route: api.RouteTaskCreate, req: api.TaskRequest{Pane: "%1", Name: "api", File: task, Agent: "sim", Env: env}}},
		stdout:  "task api: started as worker %3 api\n",
	}, {
		// A worker that waits on its dependencies starts with the
		// timeouts of st task create's environment, as st worker start's.
		name: "create with the start's timeouts", pane: "%1", args: []string{"task", "create", "api", "--task", task, "--agent", "sim", "--deps", "schema"},
		vars:    map[string]string{"ST_HOOK_TIMEOUT": "120s", "ST_BLOCKED_TIMEOUT": "4m"},
		answers: map[string]any{api.RouteTaskCreate: tv(api.TaskWaiting, "waiting on schema")},
		asked: []asked{{route: api.RouteTaskCreate, req: api.TaskRequest{Pane: "%1", Name: "api", File: task, Agent: "sim",
			Deps: []string{"schema"}, Env: env, HookTimeout: 120 * time.Second, BlockedTimeout: 4 * time.Minute}}},
		stdout: "task api: waiting on schema\n",
	}, {
		name: "create with a timeout that is no duration", pane: "%1", args: []string{"task", "create", "api", "--task", task, "--agent", "sim"},
		vars: map[string]string{"ST_HOOK_TIMEOUT": "soon"},
		code: 1, stderr: "st: ST_HOOK_TIMEOUT=\"soon\" is not a duration (e.g. 90s): time: invalid duration \"soon\"\n",
	}, {
		name: "create refused", pane: "%1", args: []string{"task", "create", "api", "--task", task, "--agent", "sim", "--deps", "api"},
		answers: map[string]any{api.RouteTaskCreate: refusal(api.KindUsage, "task api depends on itself", "drop api from --deps")},
		asked:   []asked{{route: api.RouteTaskCreate, req: api.TaskRequest{Pane: "%1", Name: "api", File: task, Agent: "sim", Deps: []string{"api"}, Env: env}}},
		code:    1, stderr: "st: task api depends on itself\nTry: drop api from --deps\n",
	}, {
		name: "list", pane: "%1", args: []string{"task", "list"},
		answers: map[string]any{api.RouteTaskList: []api.TaskView{running, tv(api.TaskWaiting, "waiting on api")}},
		asked:   []asked{{route: api.RouteTaskList, req: api.IDRequest{Pane: "%1"}}},
		stdout:  "TASK  AGENT  STATE    FOR  DETAIL\napi   sim    running  3s   as worker %3 api\napi   sim    waiting  3s   on api\n",
	}, {
		name: "cancel", pane: "%1", args: []string{"task", "cancel", "api"},
		answers: map[string]any{api.RouteTaskCancel: tv(api.TaskCancelled, "cancelled before it started")},
		asked:   []asked{{route: api.RouteTaskCancel, req: api.IDRequest{Pane: "%1", ID: "api"}}},
		stdout:  "task api: cancelled before it started\n",
	}, {
		name: "cancel refused", pane: "%1", args: []string{"task", "cancel", "api"},
		answers: map[string]any{api.RouteTaskCancel: refusal(api.KindConflict, "task api is done already", "st task list")},
		asked:   []asked{{route: api.RouteTaskCancel, req: api.IDRequest{Pane: "%1", ID: "api"}}},
		code:    1, stderr: "st: task api is done already\nTry: st task list\n",
	}})
}

func TestRunGate(t *testing.T) {
	open := api.Gate{ID: "g1", Question: "Ship it?", Options: []string{"yes", "no"}, Pane: "%3", State: api.GateOpen}
	answered := open
	answered.State, answered.Answer = api.GateAnswered, "yes"
	timedOut := open
	timedOut.State = api.GateTimedOut
	ask := api.GateRequest{Pane: "%3", Question: "Ship it?", Options: []string{"yes", "no"}}
	wait := api.GateRequest{ID: "g1", Timeout: time.Minute}
	waiting := "st: gate g1 is open; waiting for a person to answer (st gate answer g1 OPTION, or the web UI)\n"
	checkRuns(t, []runCase{{
		name: "ask", pane: "%3", args: []string{"gate", "ask", "Ship it?", "--option", "yes", "--option", "no"},
		answers: map[string]any{api.RouteGateAsk: open, api.RouteGateWait: answered},
		asked:   []asked{{route: api.RouteGateAsk, req: ask}, {route: api.RouteGateWait, req: wait}},
		stdout:  "yes\n", stderr: waiting,
	}, {
		name: "ask times out", pane: "%3", args: []string{"gate", "ask", "Ship it?", "--option", "yes", "--option", "no", "--timeout", "10m"},
		answers: map[string]any{api.RouteGateAsk: open, api.RouteGateWait: timedOut},
		asked:   []asked{{route: api.RouteGateAsk, req: api.GateRequest{Pane: "%3", Question: "Ship it?", Options: []string{"yes", "no"}, Timeout: 10 * time.Minute}}, {route: api.RouteGateWait, req: wait}},
		code:    3, stderr: waiting + "st: timeout: no one answered gate g1 within 10m0s\n",
	}, {
		name: "ask refused", pane: "%3", args: []string{"gate", "ask", "Ship it?", "--option", "yes"},
		answers: map[string]any{api.RouteGateAsk: refusal(api.KindUsage, "a gate needs two options or more", `st gate ask "QUESTION" --option A --option B`)},
		asked:   []asked{{route: api.RouteGateAsk, req: api.GateRequest{Pane: "%3", Question: "Ship it?", Options: []string{"yes"}}}},
		code:    1, stderr: "st: a gate needs two options or more\nTry: st gate ask \"QUESTION\" --option A --option B\n",
	}, {
		name: "list", args: []string{"gate", "list"},
		answers: map[string]any{api.RouteGateList: []api.Gate{open}}, asked: []asked{{route: api.RouteGateList, req: api.IDRequest{}}},
		stdout: "GATE  STATE  FROM  QUESTION  OPTIONS   ANSWER\ng1    open   %3    Ship it?  yes | no  \n",
	}, {
		name: "answer", args: []string{"gate", "answer", "g1", "yes"},
		answers: map[string]any{api.RouteGateAnswer: answered},
		asked:   []asked{{route: api.RouteGateAnswer, req: api.GateRequest{ID: "g1", Option: "yes", By: "cli"}}},
		stdout:  "gate g1: answered yes\n",
	}, {
		name: "answer refused to an agent", pane: "%3", args: []string{"gate", "answer", "g1", "yes"},
		answers: map[string]any{api.RouteGateAnswer: refusal(api.KindUsage, "a gate is answered by a person, and %3 runs an agent", "answer it in the web UI or your own shell")},
		asked:   []asked{{route: api.RouteGateAnswer, req: api.GateRequest{Pane: "%3", ID: "g1", Option: "yes", By: "cli"}}},
		code:    1, stderr: "st: a gate is answered by a person, and %3 runs an agent\nTry: answer it in the web UI or your own shell\n",
	}})
}

// TestRunHook: what an agent's hook hands st, and what the agent is told.
func TestRunHook(t *testing.T) {
	payload := `{"hook_event_name":"PreToolUse","tool_input":{"command":"go test ./..."},"cwd":"/w"}`
	hook := func(event string, payload string) asked {
		return asked{route: api.RouteHook, req: api.HookRequest{Agent: "claude", Event: event, Pane: "%3", Payload: []byte(payload)}}
	}
	deny := func(reason string) string {
		b, _ := json.Marshal(map[string]any{"hookSpecificOutput": map[string]any{
			"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": reason}})
		return string(b) + "\n"
	}
	checkRuns(t, []runCase{{
		name: "event", pane: "%3", args: []string{"hook", "claude", "Stop"}, stdin: `{"hook_event_name":"Stop"}`,
		answers: map[string]any{api.RouteHook: api.HookResponse{}}, asked: []asked{hook("Stop", `{"hook_event_name":"Stop"}`)},
	}, {
		name: "st denies a tool call", pane: "%3", args: []string{"hook", "claude", "PreToolUse"}, stdin: payload,
		answers: map[string]any{api.RouteHook: api.HookResponse{Deny: true, Reason: "st: this pane's worker is stopping"}},
		asked:   []asked{hook("PreToolUse", payload)},
		stdout:  deny("st: this pane's worker is stopping"),
	}, {
		name: "st is down", pane: "%3", args: []string{"hook", "claude", "Stop"}, stdin: `{}`, down: true,
	}})
}

// TestRunCompletion: a worker's name completes from the st that runs.
func TestRunCompletion(t *testing.T) {
	checkRuns(t, []runCase{{
		name: "worker read", pane: "%1", args: []string{"__complete", "worker", "read", "a"},
		answers: map[string]any{api.RouteWorkerList: []api.WorkerView{view("%3", "api", api.Working), view("%4", "docs", api.Done)}},
		asked:   []asked{{route: api.RouteWorkerList, req: api.IDRequest{Pane: "%1", All: true}}},
		stdout:  "api\t%3 sim, working\n:4\n",
		stderr:  "Completion ended with directive: ShellCompDirectiveNoFileComp\n",
	}, {
		name: "st is down", pane: "%1", args: []string{"__complete", "worker", "read", ""}, down: true,
		stdout: ":4\n", stderr: "Completion ended with directive: ShellCompDirectiveNoFileComp\n",
	}})
}

// TestGateAskStoppedByCtrlC: Ctrl-C while st gate ask waits withdraws
// the gate it opened (no one waits for its answer now), and says so in
// st's words (not "context canceled"), with the exit status of an
// interrupted command. If st cannot be reached, the gate stays open, and
// the words say how a person answers it; if st refuses, they say why.
func TestGateAskStoppedByCtrlC(t *testing.T) {
	open := api.Gate{ID: "g1", Question: "Ship it?", Options: []string{"yes", "no"}, Pane: "%3", State: api.GateOpen}
	withdrawn := open
	withdrawn.State = api.GateWithdrawn
	for _, c := range []struct {
		name     string
		withdraw any  // the daemon's answer to the withdrawal
		down     bool // the daemon is gone when st withdraws
		want     string
	}{
		{"withdrawn", withdrawn, false,
			"st: stopped waiting; gate g1 is withdrawn: it left st gate list, and no one can answer it now\nTry: st gate ask \"QUESTION\" --option A --option B asks again\n"},
		{"st is down", withdrawn, true,
			"st: stopped waiting; st could not be reached to withdraw gate g1, so it stays open, and its answer will wait in st gate list --all\nTry: st gate answer g1 OPTION answers it; st gate list --all shows the answer\n"},
		{"answered meanwhile", &api.Error{Kind: api.KindConflict, Message: `refused: gate g1 was already answered "yes" (by cli)`}, false,
			"st: stopped waiting; gate g1 was not withdrawn: gate g1 was already answered \"yes\" (by cli)\nTry: st gate list --all shows the gate and its answer\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var once sync.Once
			d := newFakeDaemon(t, map[string]any{api.RouteGateAsk: open, api.RouteGateWithdraw: c.withdraw,
				api.RouteGateWait: answerFunc(func(d *fakeDaemon, _ []byte) any {
					// The person presses Ctrl-C while st waits (Main has
					// its signal handler in place until it returns: st is
					// waiting now).
					once.Do(func() {
						if c.down {
							// This answer is its last: no new
							// connection finds the socket.
							d.mu.Lock()
							d.srv.SetKeepAlivesEnabled(false)
							d.mu.Unlock()
							os.Remove(api.SocketPath(d.home))
						}
						syscall.Kill(os.Getpid(), syscall.SIGINT)
					})
					return open
				})})
			d.start()
			r := &stRun{d: d, vars: d.inPaneVars("%3")}
			code := r.run("gate", "ask", "Ship it?", "--option", "yes", "--option", "no")
			if errs := r.stderr.String(); code != 130 || !strings.HasSuffix(errs, c.want) || strings.Contains(errs, "context canceled") {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 130 and it to end:\n%s", code, errs, c.want)
			}
			var asked []string
			for _, call := range d.taken() {
				if call.Route == api.RouteGateWithdraw {
					asked = append(asked, string(call.Body))
				}
			}
			if want := []string{`{"pane":"%3","id":"g1"}`}; !c.down && !slices.Equal(asked, want) {
				t.Errorf("withdrawals asked: %q, want %q", asked, want)
			}
		})
	}
}
