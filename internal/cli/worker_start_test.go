package cli

import (
	"testing"

	"github.com/sophonz/st/internal/api"
)

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
