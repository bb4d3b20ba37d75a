package orch

import "github.com/sophonz/st/internal/api"

// The records and the wire types live in internal/api, so that the
// client and the CLI speak them without importing orch; orch names them
// as its own.
type (
	State            = api.State
	Worker           = api.Worker
	Run              = api.Run
	Error            = api.Error
	StartRunRequest  = api.StartRunRequest
	StartRequest     = api.StartRequest
	WaitRequest      = api.WaitRequest
	WaitResult       = api.WaitResult
	WorkerView       = api.WorkerView
	IDRequest        = api.IDRequest
	DoneRequest      = api.DoneRequest
	HookRequest      = api.HookRequest
	HookResponse     = api.HookResponse
	RunView          = api.RunView
	TaskState        = api.TaskState
	Task             = api.Task
	TaskRequest      = api.TaskRequest
	TaskView         = api.TaskView
	GateState        = api.GateState
	Gate             = api.Gate
	GateRequest      = api.GateRequest
	GraphAgent       = api.GraphAgent
	Subagent         = api.Subagent
	Teammate         = api.Teammate
	WorktreeInfo     = api.WorktreeInfo
	Scope            = api.Scope
	DiffResult       = api.DiffResult
	MergeResult      = api.MergeResult
	OfferRequest     = api.OfferRequest
	OfferView        = api.OfferView
	MachineRef       = api.MachineRef
	PeerStart        = api.PeerStart
	PeerOp           = api.PeerOp
	PeerWatchRequest = api.PeerWatchRequest
	PeerWatchResult  = api.PeerWatchResult
	PeerReparent     = api.PeerReparent
	PeerPaneResult   = api.PeerPaneResult
	RestoreStats     = api.RestoreStats
	Status           = api.Status
)

// Worker states, error kinds, task and gate states.
const (
	Starting    = api.Starting
	Blocked     = api.Blocked
	Working     = api.Working
	Waiting     = api.Waiting
	Idle        = api.Idle
	Done        = api.Done
	Failed      = api.Failed
	Gone        = api.Gone
	Unreachable = api.Unreachable

	KindUsage       = api.KindUsage
	KindNotFound    = api.KindNotFound
	KindConflict    = api.KindConflict
	KindDepth       = api.KindDepth
	KindBlocked     = api.KindBlocked
	KindNoHooks     = api.KindNoHooks
	KindTimeout     = api.KindTimeout
	KindInternal    = api.KindInternal
	KindUnreachable = api.KindUnreachable
	KindRemote      = api.KindRemote

	TaskWaiting   = api.TaskWaiting
	TaskRunning   = api.TaskRunning
	TaskDone      = api.TaskDone
	TaskFailed    = api.TaskFailed
	TaskCancelled = api.TaskCancelled

	GateOpen     = api.GateOpen
	GateAnswered = api.GateAnswered
	GateTimedOut = api.GateTimedOut
)
