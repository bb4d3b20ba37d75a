package client

import (
	"context"

	"github.com/sophonz/st/internal/api"
)

// A typed method per route of the daemon's API (api.Route*): what each
// takes and answers is in its signature.

// Shutdown asks the daemon to stop; it answers its pid.
func (c *Client) Shutdown(ctx context.Context) (int, error) {
	var r struct {
		PID int `json:"pid"`
	}
	return r.PID, c.Call(ctx, api.RouteShutdown, struct{}{}, &r)
}

// Ls lists the sessions of st's tmux server, their windows and agents.
func (c *Client) Ls(ctx context.Context) ([]api.LsSession, error) {
	var r []api.LsSession
	return r, c.Call(ctx, api.RouteLs, struct{}{}, &r)
}

// Web is the web UI's address with its token.
func (c *Client) Web(ctx context.Context) (api.WebURL, error) {
	var r api.WebURL
	return r, c.Call(ctx, api.RouteWeb, struct{}{}, &r)
}

// StartRun makes a run whose coordinator is req.Pane.
func (c *Client) StartRun(ctx context.Context, req api.StartRunRequest) (*api.Run, error) {
	var r api.Run
	return &r, c.Call(ctx, api.RouteOrchStart, req, &r)
}

// Prune takes old runs out of st's history, or (without Yes) says which.
func (c *Client) Prune(ctx context.Context, req api.PruneRequest) (*api.PruneResult, error) {
	var r api.PruneResult
	return &r, c.Call(ctx, api.RouteOrchPrune, req, &r)
}

// ShowRun shows a run.
func (c *Client) ShowRun(ctx context.Context, req api.IDRequest) (*api.RunView, error) {
	var r api.RunView
	return &r, c.Call(ctx, api.RouteOrchShow, req, &r)
}

// AcceptRemote turns accept-remote on or off, or (On nil) says how it is.
func (c *Client) AcceptRemote(ctx context.Context, req api.AcceptRemoteRequest) (*api.AcceptRemoteStatus, error) {
	var r api.AcceptRemoteStatus
	return &r, c.Call(ctx, api.RouteAcceptRemote, req, &r)
}

// ReloadRemote has the daemon read this machine's sign-in again.
func (c *Client) ReloadRemote(ctx context.Context) (*api.AcceptRemoteStatus, error) {
	var r api.AcceptRemoteStatus
	return &r, c.Call(ctx, api.RouteRemoteReload, struct{}{}, &r)
}

// StartWorker starts a worker.
func (c *Client) StartWorker(ctx context.Context, req api.StartRequest) (*api.WorkerView, error) {
	var r api.WorkerView
	return &r, c.Call(ctx, api.RouteWorkerStart, req, &r)
}

// Fan starts req.Fan tries of a task.
func (c *Client) Fan(ctx context.Context, req api.StartRequest) ([]api.WorkerView, error) {
	var r []api.WorkerView
	return r, c.Call(ctx, api.RouteWorkerFan, req, &r)
}

// Wait waits for workers.
func (c *Client) Wait(ctx context.Context, req api.WaitRequest) (*api.WaitResult, error) {
	var r api.WaitResult
	return &r, c.Call(ctx, api.RouteWorkerWait, req, &r)
}

// Done records a worker's report, and answers which worker it was. The
// daemon answers the whole WorkerView; this decodes its id and name
// alone, all a report prints: decoding into WorkerView costs each agent's
// report encoding/json's first look at a dozen types.
func (c *Client) Done(ctx context.Context, req api.DoneRequest) (*api.WorkerRef, error) {
	var r api.WorkerRef
	return &r, c.Call(ctx, api.RouteWorkerDone, req, &r)
}

// worker runs a route that takes an IDRequest and answers a WorkerView.
func (c *Client) worker(ctx context.Context, route string, req api.IDRequest) (*api.WorkerView, error) {
	var r api.WorkerView
	return &r, c.Call(ctx, route, req, &r)
}

// Read is a worker's summary and last answer.
func (c *Client) Read(ctx context.Context, req api.IDRequest) (*api.WorkerView, error) {
	return c.worker(ctx, api.RouteWorkerRead, req)
}

// Send types req.Text into a worker.
func (c *Client) Send(ctx context.Context, req api.IDRequest) (*api.WorkerView, error) {
	return c.worker(ctx, api.RouteWorkerSend, req)
}

// Stop closes a worker's pane.
func (c *Client) Stop(ctx context.Context, req api.IDRequest) (*api.WorkerView, error) {
	return c.worker(ctx, api.RouteWorkerStop, req)
}

// Rename gives a worker the name req.Text.
func (c *Client) Rename(ctx context.Context, req api.IDRequest) (*api.WorkerView, error) {
	return c.worker(ctx, api.RouteWorkerRename, req)
}

// Release lets a worker go.
func (c *Client) Release(ctx context.Context, req api.IDRequest) (*api.WorkerView, error) {
	return c.worker(ctx, api.RouteWorkerRelease, req)
}

// Adopt makes an agent that runs already the caller's worker.
func (c *Client) Adopt(ctx context.Context, req api.IDRequest) (*api.WorkerView, error) {
	return c.worker(ctx, api.RouteWorkerAdopt, req)
}

// Offer offers an agent here to another machine's coordinator.
func (c *Client) Offer(ctx context.Context, req api.OfferRequest) (*api.OfferView, error) {
	var r api.OfferView
	return &r, c.Call(ctx, api.RouteWorkerOffer, req, &r)
}

// Diff is a worktree worker's changes.
func (c *Client) Diff(ctx context.Context, req api.IDRequest) (*api.DiffResult, error) {
	var r api.DiffResult
	return &r, c.Call(ctx, api.RouteWorkerDiff, req, &r)
}

// Merge merges a worktree worker's branch; pick is Merge of one try of a
// fan that removes the others.
func (c *Client) Merge(ctx context.Context, req api.IDRequest, pick bool) (*api.MergeResult, error) {
	route := api.RouteWorkerMerge
	if pick {
		route = api.RouteWorkerPick
	}
	var r api.MergeResult
	return &r, c.Call(ctx, route, req, &r)
}

// List is the caller's workers (req.All: every worker).
func (c *Client) List(ctx context.Context, req api.IDRequest) ([]api.WorkerView, error) {
	var r []api.WorkerView
	return r, c.Call(ctx, api.RouteWorkerList, req, &r)
}

// ListJSON is List as st's daemon wrote it, for st worker list --json:
// printing it needs no decoding into types and encoding again (at 100
// workers, a fifth of the command's CPU).
func (c *Client) ListJSON(ctx context.Context, req api.IDRequest) (IndentedJSON, error) {
	var r IndentedJSON
	return r, c.Call(ctx, api.RouteWorkerList, req, &r)
}

// CreateTask makes a task.
func (c *Client) CreateTask(ctx context.Context, req api.TaskRequest) (*api.TaskView, error) {
	var r api.TaskView
	return &r, c.Call(ctx, api.RouteTaskCreate, req, &r)
}

// ListTasks is the caller's run's tasks.
func (c *Client) ListTasks(ctx context.Context, req api.IDRequest) ([]api.TaskView, error) {
	var r []api.TaskView
	return r, c.Call(ctx, api.RouteTaskList, req, &r)
}

// CancelTask cancels a task.
func (c *Client) CancelTask(ctx context.Context, req api.IDRequest) (*api.TaskView, error) {
	var r api.TaskView
	return &r, c.Call(ctx, api.RouteTaskCancel, req, &r)
}

// gate runs a gate route.
func (c *Client) gate(ctx context.Context, route string, req api.GateRequest) (*api.Gate, error) {
	var r api.Gate
	return &r, c.Call(ctx, route, req, &r)
}

// AskGate opens a gate.
func (c *Client) AskGate(ctx context.Context, req api.GateRequest) (*api.Gate, error) {
	return c.gate(ctx, api.RouteGateAsk, req)
}

// WaitGate waits for a gate's answer, up to req.Timeout.
func (c *Client) WaitGate(ctx context.Context, req api.GateRequest) (*api.Gate, error) {
	return c.gate(ctx, api.RouteGateWait, req)
}

// AnswerGate answers a gate.
func (c *Client) AnswerGate(ctx context.Context, req api.GateRequest) (*api.Gate, error) {
	return c.gate(ctx, api.RouteGateAnswer, req)
}

// WithdrawGate withdraws the gate its asker no longer waits for.
func (c *Client) WithdrawGate(ctx context.Context, req api.GateRequest) (*api.Gate, error) {
	return c.gate(ctx, api.RouteGateWithdraw, req)
}

// Gates lists the open gates (all: every gate).
func (c *Client) Gates(ctx context.Context, all bool) ([]api.Gate, error) {
	var r []api.Gate
	return r, c.Call(ctx, api.RouteGateList, api.IDRequest{All: all}, &r)
}

// Hook hands an agent's hook event to the daemon.
func (c *Client) Hook(ctx context.Context, req api.HookRequest) (*api.HookResponse, error) {
	var r api.HookResponse
	return &r, c.Call(ctx, api.RouteHook, req, &r)
}

// StatusLine hands what Claude's status line said of the pane's agent to
// st (st statusline's).
func (c *Client) StatusLine(ctx context.Context, req api.HookRequest) error {
	var r struct{}
	return c.Call(ctx, api.RouteStatusLine, req, &r)
}

// WaitPrompt opens a permission prompt for a hook event and waits for a
// person's answer, up to st's deadline (a permission hook's).
func (c *Client) WaitPrompt(ctx context.Context, req api.HookRequest) (*api.PromptDecision, error) {
	var r api.PromptDecision
	return &r, c.Call(ctx, api.RoutePromptWait, req, &r)
}

// AnswerPrompt answers an open permission prompt (a person's).
func (c *Client) AnswerPrompt(ctx context.Context, req api.PromptAnswerRequest) (*api.Prompt, error) {
	var r api.Prompt
	return &r, c.Call(ctx, api.RoutePromptAnswer, req, &r)
}

// Prompts lists the open permission prompts.
func (c *Client) Prompts(ctx context.Context) ([]api.Prompt, error) {
	var r []api.Prompt
	return r, c.Call(ctx, api.RoutePromptList, api.IDRequest{}, &r)
}

// GuardServer is what the guard reads of the tmux server on socket, when
// that is st's own.
func (c *Client) GuardServer(ctx context.Context, pane, socket string) (*api.GuardServer, error) {
	var r api.GuardServer
	return &r, c.Call(ctx, api.RouteGuardServer, api.GuardServerRequest{Pane: pane, Socket: socket}, &r)
}

// MachineRoutes says how this machine reaches each of its account's.
func (c *Client) MachineRoutes(ctx context.Context) ([]api.MachineRoute, error) {
	var r []api.MachineRoute
	return r, c.Call(ctx, api.RouteRemoteRoutes, struct{}{}, &r)
}

// Attention lists the open attention items (req.All: the closed ones kept
// too), the newest first.
func (c *Client) Attention(ctx context.Context, req api.AttentionRequest) (*api.AttentionList, error) {
	var r api.AttentionList
	return &r, c.Call(ctx, api.RouteAttention, req, &r)
}

// WaitAttention waits, up to req.Timeout, for an item opened after
// req.After.
func (c *Client) WaitAttention(ctx context.Context, req api.AttentionRequest) (*api.AttentionList, error) {
	var r api.AttentionList
	return &r, c.Call(ctx, api.RouteAttentionWait, req, &r)
}

// DismissAttention closes an open item at a person's word.
func (c *Client) DismissAttention(ctx context.Context, req api.AttentionRequest) (*api.Attention, error) {
	var r api.Attention
	return &r, c.Call(ctx, api.RouteAttentionDismiss, req, &r)
}

// TmuxStatus puts st's segment on the tmux status line, or takes it off.
func (c *Client) TmuxStatus(ctx context.Context, on bool) (*api.TmuxStatus, error) {
	var r api.TmuxStatus
	return &r, c.Call(ctx, api.RouteTmuxStatus, api.TmuxStatusRequest{On: on}, &r)
}
