package tmux

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A server that will not take a client. Killed while it started (the
// restore's fault row kills the server st's restore brings up, again and
// again), a tmux server was once left running with its socket in place,
// answering every new client by closing the connection ("server exited
// unexpectedly") for over a minute: it had begun to exit and waited on
// something of its own. Nothing can be asked of it through its socket, so
// st finds it by its process: a tmux process started with this socket
// (-S path) that leads a session of its own (a server does setsid; a
// client does not) and is not this process's child.

// EndWedgedServer kills (SIGKILL) the server process of c's socket that
// takes no client, and waits up to a second for it to go. It reports
// whether it found one. Only a server started on this very socket path is
// touched: st's own (a person's server has another socket, or none of
// st's -S).
func (c *Client) EndWedgedServer() bool {
	pid := serverProcess(c.socket)
	if pid <= 1 {
		return false
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if syscall.Kill(pid, 0) != nil {
			break
		}
	}
	return true
}

// serverProcess is the pid of a tmux server process started with -S
// socket, 0 for none.
func serverProcess(socket string) int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	self := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		argv := strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
		if len(argv) < 3 || !strings.HasSuffix(argv[0], "tmux") || !hasSocketArg(argv, socket) {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(stat)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		// state ppid pgrp session ...
		f := strings.Fields(s[i+1:])
		if len(f) < 4 || f[1] == strconv.Itoa(self) || f[3] != e.Name() {
			continue // a client of st's (its child), or no session leader
		}
		return pid
	}
	return 0
}

// hasSocketArg reports whether argv names socket with -S (before the
// command, as tmux takes it).
func hasSocketArg(argv []string, socket string) bool {
	for i := 1; i+1 < len(argv); i++ {
		if argv[i] == "-S" {
			return argv[i+1] == socket
		}
	}
	return false
}
