// Command hookstamp stands in for st in the real agents' hook commands
// while tests/real's BenchmarkRealHookState runs. A hook speaks only for
// its own pane (the daemon checks the sender's parents), so the figure
// "hook → state" has to start from the real agent firing its real hook:
// the benchmark installs st's hooks with this program's path in place of
// st's, and this program notes when the hook's process started and when
// st ended, then exits with st's status.
//
// It sends two datagrams to the benchmark's unix socket, one before it
// starts st and one after st ended:
//
//	start PID UNIXNANO 0 ARGS...
//	end PID UNIXNANO STATUS ARGS...
//
// The clock read for "start" is its first statement: the program's own
// start (a Go runtime's, about half a millisecond) comes before it and is
// not counted, and the st process it starts is, in full. The benchmark's
// floor, a bare `st version`, is run through this program too, so both
// sides of the ratio pay the same fork and exec.
//
// The paths are set when the benchmark builds it:
//
//	go build -ldflags "-X main.stBin=/path/to/st -X main.stampSock=/path/to/socket"
//
// A benchmark that is gone (the socket refuses) costs nothing but the
// notes: st still runs, and the agent still gets its answer.
package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Set with -ldflags -X by the benchmark that builds this program.
var stBin, stampSock string

func main() {
	start := time.Now()
	if stBin == "" {
		fmt.Fprintln(os.Stderr, "hookstamp: built without the st path (-ldflags -X main.stBin=...)")
		os.Exit(2)
	}
	var conn net.Conn
	if stampSock != "" {
		conn, _ = net.Dial("unixgram", stampSock)
	}
	args := strings.Join(os.Args[1:], " ")
	note := func(what string, at time.Time, status int) {
		if conn != nil {
			// A datagram is one note; a lost one is a sample the
			// benchmark does not get, which it counts.
			fmt.Fprintf(conn, "%s %d %d %d %s", what, os.Getpid(), at.UnixNano(), status, args)
		}
	}
	note("start", start, 0)
	cmd := exec.Command(stBin, os.Args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	status := 0
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			fmt.Fprintf(os.Stderr, "hookstamp: run %s: %v\n", stBin, err)
			os.Exit(2)
		}
		status = ee.ExitCode()
	}
	note("end", time.Now(), status)
	os.Exit(status)
}
