package orch

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/tmux"
)

// Ending an agent that outlives its window. tmux ends a pane by hanging
// up its terminal; Gemini CLI (and its relaunched child) goes on running
// on the deleted terminal (measured on 0.61.0), so for a kind whose
// description says StopTree st also ends the pane's process group: the
// pane's first process leads it (tmux starts it in a session of its own),
// and the agent's children are in it.

// killPane closes pane id, and ends its process group when kind's agent
// outlives its window.
func (m *Manager) killPane(ctx context.Context, id, kind string) error {
	pid := 0
	if k, _ := agent.Lookup(kind); k != nil && k.StopTree {
		pid = m.panePID(ctx, id)
	}
	err := m.cfg.Tmux.KillPane(ctx, id)
	if pid > 1 {
		go endGroup(pid, kind, 5*time.Second)
	}
	if err != nil && !errors.Is(err, tmux.ErrNoPane) {
		return err
	}
	return nil
}

// panePID is the pid of pane id's first process, 0 when st cannot tell.
func (m *Manager) panePID(ctx context.Context, id string) int {
	panes, err := m.cfg.Tmux.ListPanes(ctx)
	if err != nil {
		return 0
	}
	for _, p := range panes {
		if p.ID == id {
			return p.PID
		}
	}
	return 0
}

// endGroup ends the process group that pid led, if a process of it still
// runs kind's agent (the leader may be gone, and a pid may have been given
// to another program since): SIGTERM, then SIGKILL after wait.
func endGroup(pid int, kind string, wait time.Duration) {
	if !groupRuns(pid, kind) {
		return
	}
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		if len(groupOf(pid)) == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	if groupRuns(pid, kind) {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
}

// groupOf lists the processes of process group pgid, from /proc.
func groupOf(pgid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces and
		// parentheses, so the fields are counted from its last ")".
		s := string(data)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 2 && f[2] == strconv.Itoa(pgid) {
			out = append(out, pid)
		}
	}
	return out
}

// groupRuns reports whether a process of group pgid runs kind's agent.
func groupRuns(pgid int, kind string) bool {
	for _, pid := range groupOf(pgid) {
		if runsKind(pid, kind) {
			return true
		}
	}
	return false
}

// runsKind reports whether process pid runs kind's agent, by its command
// line as the kind's description tells its processes.
func runsKind(pid int, kind string) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil || len(data) == 0 {
		return false
	}
	argv := strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
	return agent.ByProcess(argv, agent.ProgramEnvs(os.Getenv)) == kind
}
