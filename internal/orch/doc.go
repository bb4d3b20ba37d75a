// Package orch is st's model of delegation: runs, their coordinators and
// workers, the worker state machine driven by the agents' hooks, the
// delivery of typed lines, the notices sent to coordinators, and the depth
// rules, with the records of work across machines (remote.go, hosted.go)
// that internal/peer keeps true. The daemon and internal/peer are its
// users; it is the only writer of run.json.
//
// Its files are named for what they hold: run.go, worker.go, start.go
// (and place.go, deliver.go), task.go, gate.go, scope.go, fan.go,
// worktree.go, chain.go (depth), adopt.go, agentteam.go (Claude's agent
// teams), report.go, notice.go, hook.go, watch.go, restore.go (and
// resume.go, restorer.go), remote.go and hosted.go (other machines'
// records; internal/peer talks to them). The state's owners: registry.go
// (and record.go, run.json's records), facts.go, gate.go, restorer.go,
// notice.go, saver.go; change.go is how the registry changes.
package orch
