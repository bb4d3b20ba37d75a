package cli

import (
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
)

// Tokens show in st worker list (human units, with the estimated cost),
// st worker read (every kind) and st orch show (per worker, the run's
// total and its budget); st orch start passes --budget on.
func TestRunTokens(t *testing.T) {
	cost, runCost := 0.4213, 0.5
	spent := &api.Tokens{Input: 1200, Output: 345, CacheRead: 10500, CacheWrite: 0, Total: 12045, CostUSD: &cost, CostEstimated: true, PriceDate: "2026-12-01"}
	w := view("%3", "api", api.Done)
	w.Parent, w.Summary, w.Tokens = "%1", "wrote the tests", spent
	bare := view("%4", "docs", api.Working)
	bare.Parent = "%1"
	created := time.Date(2026, 12, 1, 9, 30, 0, 0, time.Local)
	total := &api.Tokens{Input: 1200, Output: 345, CacheRead: 10500, Total: 12045, CostUSD: &runCost, CostEstimated: true, PriceDate: "2026-12-01"}
	checkRuns(t, []runCase{{
		name: "list", pane: "%1", args: []string{"worker", "list"},
		answers: map[string]any{api.RouteWorkerList: []api.WorkerView{w, bare}}, asked: []asked{{route: api.RouteWorkerList, req: api.IDRequest{Pane: "%1"}}},
		stdout: "ID  NAME  AGENT  STATE    FOR  TOKENS      RUN\n%3  api   sim    done     12s  12k ~$0.42  r-1\n%4  docs  sim    working  12s  -           r-1\n",
	}, {
		name: "read", pane: "%1", args: []string{"worker", "read", "api"},
		answers: map[string]any{api.RouteWorkerRead: w}, asked: []asked{{route: api.RouteWorkerRead, req: api.IDRequest{Pane: "%1", ID: "api"}}},
		stdout: "worker:  %3 api (sim, run r-1)\nstate:   done for 12s\n" +
			"tokens:  12k (input 1.2k, output 345, cache read 10.5k, cache write 0), ~$0.42 estimated (prices of 2026-12-01)\n" +
			"summary: wrote the tests\nlast answer:\n  (none yet)\n",
	}, {
		name: "show", args: []string{"orch", "show", "r-1"},
		answers: map[string]any{api.RouteOrchShow: api.RunView{Run: api.Run{ID: "r-1", Coordinator: "%1", Created: created}, Views: []api.WorkerView{w, bare},
			Tokens: total, BudgetUse: &api.BudgetView{Budget: api.Budget{Tokens: 10000}, Text: "10k", Used: 1.2045, UsedKnown: true, Gate: "gate-x", Held: true}}},
		asked: []asked{{route: api.RouteOrchShow, req: api.IDRequest{ID: "r-1"}}},
		stdout: "run:         r-1\nobjective:   (none given)\ncoordinator: %1\nstarted:     2026-12-01 09:30:00\n" +
			"tokens:      12k (input 1.2k, output 345, cache read 10.5k, cache write 0), ~$0.50 estimated (prices of 2026-12-01)\n" +
			"budget:      10k, 120% used - spent: no new worker starts until gate gate-x is answered\nworkers:\n" +
			"  ID  NAME  AGENT  STATE    FOR  PARENT  TOKENS      SUMMARY\n" +
			"  %3  api   sim    done     12s  %1      12k ~$0.42  wrote the tests\n" +
			"  %4  docs  sim    working  12s  %1      -           \n",
	}, {
		name: "start with a budget", pane: "%1", args: []string{"orch", "start", "--objective", "x", "--budget", "$5"},
		answers: map[string]any{api.RouteOrchStart: api.Run{ID: "r-1"}},
		asked:   []asked{{route: api.RouteOrchStart, req: api.StartRunRequest{Pane: "%1", Objective: "x", Budget: "$5"}}},
		stdout:  "r-1\n",
	}})
}
