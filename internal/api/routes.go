package api

// The daemon's routes on its socket: each takes a POST of its request's
// JSON and answers its response's JSON, or an Error. Which routes are
// served, and what each asks of internal/authz, is the socket table in
// internal/daemon (daemon.SocketRoutes lists it).
const (
	RouteStatus        = "/v1/status"     // {} -> StatusInfo
	RouteShutdown      = "/v1/shutdown"   // {} -> {pid}
	RouteLs            = "/v1/ls"         // {} -> []LsSession
	RouteWeb           = "/v1/web"        // {} -> WebURL
	RouteOrchStart     = "/v1/orch/start" // StartRunRequest -> Run
	RouteOrchShow      = "/v1/orch/show"  // IDRequest -> RunView
	RouteAcceptRemote  = "/v1/orch/accept-remote"
	RouteRemoteReload  = "/v1/remote/reload" // {} -> AcceptRemoteStatus
	RouteRemoteRoutes  = "/v1/remote/routes" // {} -> []MachineRoute
	RouteWorkerStart   = "/v1/worker/start"  // StartRequest -> WorkerView
	RouteWorkerWait    = "/v1/worker/wait"   // WaitRequest -> WaitResult
	RouteWorkerDone    = "/v1/worker/done"   // DoneRequest -> WorkerView
	RouteWorkerRead    = "/v1/worker/read"   // IDRequest -> WorkerView
	RouteWorkerSend    = "/v1/worker/send"
	RouteWorkerStop    = "/v1/worker/stop"
	RouteWorkerRename  = "/v1/worker/rename"
	RouteWorkerRelease = "/v1/worker/release"
	RouteWorkerAdopt   = "/v1/worker/adopt"
	RouteWorkerOffer   = "/v1/worker/offer" // OfferRequest -> OfferView
	RouteWorkerDiff    = "/v1/worker/diff"  // IDRequest -> DiffResult
	RouteWorkerMerge   = "/v1/worker/merge" // IDRequest -> MergeResult
	RouteWorkerPick    = "/v1/worker/pick"
	RouteWorkerFan     = "/v1/worker/fan"  // StartRequest -> []WorkerView
	RouteWorkerList    = "/v1/worker/list" // IDRequest -> []WorkerView
	RouteTaskCreate    = "/v1/task/create" // TaskRequest -> TaskView
	RouteTaskList      = "/v1/task/list"   // IDRequest -> []TaskView
	RouteTaskCancel    = "/v1/task/cancel"
	RouteGateAsk       = "/v1/gate/ask" // GateRequest -> Gate
	RouteGateWait      = "/v1/gate/wait"
	RouteGateAnswer    = "/v1/gate/answer"
	RouteGateList      = "/v1/gate/list"     // IDRequest -> []Gate
	RouteGateWithdraw  = "/v1/gate/withdraw" // GateRequest -> Gate
	RouteHook          = "/v1/hook"          // HookRequest -> HookResponse
	// RouteStatusLine is st statusline's: what Claude's status line
	// said of the pane's agent (its cost, its account's usage limits),
	// as a HookRequest of event "StatusLine" -> {}.
	RouteStatusLine = "/v1/statusline"
	// MaxStatusLineBytes is the largest status-line JSON st takes:
	// Claude's is well under 4 KiB (a few ids, paths and numbers).
	MaxStatusLineBytes = 64 << 10
	// RoutePromptWait is a hook's: it opens a permission prompt for its
	// pane and waits for a person's answer, up to st's deadline.
	RoutePromptWait   = "/v1/prompt/wait"   // HookRequest -> PromptDecision
	RoutePromptAnswer = "/v1/prompt/answer" // PromptAnswerRequest -> Prompt
	RoutePromptList   = "/v1/prompt/list"   // IDRequest -> []Prompt
	// The attention items (issue 34): AttentionRequest -> AttentionList,
	// and for a dismissal -> Attention.
	RouteAttention        = "/v1/attention"
	RouteAttentionWait    = "/v1/attention/wait"
	RouteAttentionDismiss = "/v1/attention/dismiss"
	// RouteTmuxStatus puts st's segment on the tmux status line, or takes
	// it off: TmuxStatusRequest -> TmuxStatus.
	RouteTmuxStatus  = "/v1/setup/tmux-status"
	RouteGuardServer = "/v1/guard/server" // GuardServerRequest -> GuardServer
)

// WebURL is what RouteWeb answers: the web UI's address with its token.
type WebURL struct {
	URL string `json:"url"`
}

// PeerPrefix is where the peer API's routes live on a machine's peer
// listener: PeerPrefix + a PeerRoute.
const PeerPrefix = "/peer/v1/"

// The peer API's routes: what another machine of the account may ask.
const (
	PeerRouteStart    = "start"    // PeerStart -> WorkerView
	PeerRouteWatch    = "watch"    // PeerWatchRequest -> PeerWatchResult
	PeerRouteRead     = "read"     // PeerOp -> WorkerView
	PeerRouteSend     = "send"     // PeerOp -> WorkerView
	PeerRouteStop     = "stop"     // PeerOp -> WorkerView
	PeerRouteRename   = "rename"   // PeerOp -> WorkerView
	PeerRouteRelease  = "release"  // PeerOp -> WorkerView
	PeerRouteAdopt    = "adopt"    // PeerOp -> WorkerView
	PeerRouteReparent = "reparent" // PeerReparent -> {}
	PeerRoutePane     = "pane"     // IDRequest -> PeerPaneResult
	PeerRouteGraph    = "graph"    // {} -> []GraphAgent
	PeerRouteTerm     = "term"     // GET, a websocket: an agent's window (web.ServePeerTerm)
)
