// Package authz is st's one answer to "may this actor do this action to
// this target?". Every route of every surface asks it: the unix socket
// (internal/daemon), the web UI's HTTP routes and websockets
// (internal/web), the peer API and the peer terminal (other machines), and
// the push answer. It holds no state and does no I/O: the facts a decision
// needs (does a pane run an agent, whose worker is it, was it offered to a
// machine, is accept-remote on) come from a Facts that orch implements,
// and who asked (an Actor) is told by the surface: the socket from the
// caller's process ancestry and environment, the peer API from the
// calling machine's certificate, the web UI from its session.
//
// # The model
//
// st types into agents that run shell commands, so every action below is
// a way to run commands on this machine. Each refusal is one of two kinds:
//
//   - a BOUNDARY: st refuses it, and a test proves it cannot be gone
//     around. Another machine, another local user, a page of another
//     origin, anyone on the network, the push service, and a Codex that
//     runs in its sandbox are held by boundaries.
//   - a RAIL: st refuses it to stop an accident, but an agent that runs as
//     the same user with a shell can go around it: it can run tmux itself
//     (send-keys into any pane, new-window), read $ST_HOME (the web token
//     in web.token), edit $ST_HOME/config.toml, or post to st's socket
//     with a forged request. Gates, the guard (st's PreToolUse hook) and
//     --owns scopes are rails against such an agent; only a sandbox (or
//     another user account) makes them boundaries.
//
// Actors (Kind):
//
//   - Person: a person at a shell that is not an agent's pane (no agent
//     among the caller's parents, no agent's environment, not on an
//     agent's terminal, not detached).
//   - Agent: an agent in a pane (a coordinator, a worker, a teammate of a
//     Claude agent team, or an agent st does not know), or any command it
//     runs. Its pane is the one among its parents, never the $TMUX_PANE it
//     claims.
//   - SandboxedCodex: a command Codex runs for its model while Codex runs
//     in a sandbox, but which left the sandbox (escalated, or let out by
//     the rule st plugin install writes). Through st it must gain nothing
//     its sandbox refuses: a boundary.
//   - WebSession: a page of st's web UI that passed the web UI's
//     credential check (the token that `st web` prints to a person).
//   - AnswerToken: the holder of a gate's or a permission prompt's
//     one-time answer link (the push service, the phone): it answers that
//     gate or prompt with that option, once.
//   - Machine: another machine of the account, proven by its certificate
//     (mutual TLS, checked against the revoked keys on every request).
//   - OtherUser, RelayClient, Network: another local user (st's socket is
//     the owner's only), a client of the control plane's relay that is
//     not a machine of the account, anyone else on the network: nothing.
//   - Local: a process of this user not yet told apart, for the actions
//     open to every local process (status, hooks, waiting): telling
//     costs a look at /proc, which st spares the hooks.
//
// Actions (Action) are named as the issue names them: start, send (type),
// adopt, offer, stop, release, rename, read a worker's answer, open a
// terminal (read-only) and type in it, answer a gate, answer an agent's
// permission prompt (Allow once, Deny, a question's option: the agent's
// waiting PermissionRequest hook takes it), accept-remote on and
// off, see the web token, change st's setup, remove old runs from st's
// history (st orch prune --yes); and the quieter ones every route needs a
// name for (read st's state, ask a gate, withdraw a gate, report, a
// hook).
//
// What an actor may read of a worker is one decision too (MayRead, which
// is st worker read's): every route that shows workers (the socket's
// lists, st orch show, st worker wait, st attention's items of a
// worker's turn; the web UI's state; the peer API's graph and answers)
// shows the texts (task, report, answers, error) of only the workers the
// asker may read, and of the others their name, state and times. The daemon and the peer API ask it where their answers leave,
// through orch's ShowTo, so that a route added later is held by it too.
//
// What each actor may do:
//
//   - A person: everything on this machine.
//   - An agent (rails): read st's state, start runs and workers (not the
//     sim agent, a test program that runs any command its task names,
//     unless a person allowed it: agents_start_sim in config.toml), act on
//     its own workers (send, stop, rename, release, read, merge: a worker
//     it started, or one under those), adopt an agent, ask a gate and
//     withdraw a gate it asked (Ctrl-C on its st gate ask: the gate's
//     record names the pane, and another agent's gate is a person's to
//     answer), report from its own pane, turn accept-remote off. Never
//     what is a person's:
//     answer a gate or a permission prompt (its own pane's too: an agent
//     that allowed its own tool calls would need no person), offer an
//     agent to another machine, turn accept-remote
//     on, see the web token, remove old runs from st's history. It acts
//     as the pane it runs in: a $TMUX_PANE that names another pane is
//     refused. How it goes around each: tmux
//     send-keys into any pane; cat $ST_HOME/web.token and the web UI's
//     gate answer; its own edit of config.toml; a request it writes to
//     the socket itself, claiming any pane.
//   - A sandboxed Codex (boundaries): what an agent may, but not adopt an
//     agent it did not start (that would let it type into a pane it does
//     not own), and not stop st. Its sandbox refuses the socket (so only
//     st's own commands, by the rule, reach st), other processes and
//     tmux, writes outside its workspace and the temp folder (which every
//     sandbox shares: a report queued there is handed in only by the hook
//     of the call that queued it), and with a filesystem profile that
//     denies them, reads of $ST_HOME. What it starts runs under that
//     agent's own settings (Claude's permission mode, Codex's sandbox),
//     not under the coordinator's sandbox: a person who lets Claude run
//     every command without asking lets a sandboxed Codex coordinator's
//     Claude workers do so too.
//   - A web session: what the page does (its state and the workers'
//     reports, terminals, adopt by a drop, release, answer a gate or a
//     permission prompt): the
//     person at this machine's browser.
//   - An answer token: answer its own gate or permission prompt with its
//     own option, once.
//   - Another machine (boundaries), only while this machine takes workers
//     (accept-remote on; "on" means every machine of the account may run
//     commands here, as a worker's task is shell work): start workers;
//     act on its own workers (those it started or adopted here); adopt an
//     agent a person here offered to it; see the agents here; open the
//     window of a pane handed to it (its workers: typing; an offer not yet
//     adopted: read-only), this machine deciding read-only, the asking
//     machine's switch only narrowing it. With accept-remote off, it may
//     still read and watch its own workers and find their coordinators.
//     A machine signed out or removed is refused on every request, and its
//     open connections close within one heartbeat.
//   - Another local user, a relay client: nothing. The network (anyone who
//     reaches the web UI's loopback port: another local user, a page of
//     another origin): the web UI's page and its script and style files,
//     which are the same for everyone and hold nothing of the user's (a
//     <script src> carries no credential); nothing else.
package authz
