package cli

import (
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
)

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
