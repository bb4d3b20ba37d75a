// Command hookstamp stands in for st in the real agents' hook commands
// while tests/real's BenchmarkRealHookState runs. A hook speaks only for
// its own pane (the daemon checks the sender's parents), so the figure
// "hook → state" has to start from the real agent firing its real hook:
// the benchmark installs st's hooks with this program's path in place of
// st's, and this program notes when the hook's process started and when
// st ended, then exits with st's status.
//
// It sends three datagrams to the benchmark's unix socket: one before it
// starts st, one when the agent has closed the hook's standard input (the
// event's payload, which it hands on to st as it comes), and one after st
// ended:
//
//	start PID UNIXNANO 0 0 0 0 ARGS...
//	stdin PID UNIXNANO 0 0 0 0 ARGS...
//	end PID UNIXNANO STATUS CPU FAULTS WAITED ARGS...
//
// where CPU is the CPU time st used, user and system, in microseconds;
// FAULTS its major page faults (pages read from disk, its binary's among
// them); and WAITED the time its main thread spent runnable but waiting
// for a core, in microseconds (the scheduler's run_delay, from
// /proc/PID/schedstat, read while st is a zombie not yet reaped; -1 when
// it could not be read). Beside its wall time they tell a process that
// waited for a core or the disk from one that worked.
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
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
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
	note := func(what string, at time.Time, status int, cpu time.Duration, faults int64, waited time.Duration) {
		if conn != nil {
			// A datagram is one note; a lost one is a sample the
			// benchmark does not get, which it counts.
			fmt.Fprintf(conn, "%s %d %d %d %d %d %d %s", what, os.Getpid(), at.UnixNano(), status, cpu.Microseconds(), faults, waited.Microseconds(), args)
		}
	}
	note("start", start, 0, 0, 0, 0)
	cmd := exec.Command(stBin, os.Args[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	// The payload goes through a pipe of this program's, copied as it
	// comes (st starts while the agent still writes, as it would), so
	// that its end can be noted: how long the agent takes to hand the
	// payload over is part of the hook's time that st cannot shorten.
	in, err := cmd.StdinPipe()
	if err != nil {
		fmt.Fprintf(os.Stderr, "hookstamp: %v\n", err)
		os.Exit(2)
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "hookstamp: run %s: %v\n", stBin, err)
		os.Exit(2)
	}
	go func() {
		io.Copy(in, os.Stdin)
		note("stdin", time.Now(), 0, 0, 0, 0)
		in.Close()
	}()
	waited := runDelay(cmd.Process.Pid)
	status := 0
	if err := cmd.Wait(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			fmt.Fprintf(os.Stderr, "hookstamp: run %s: %v\n", stBin, err)
			os.Exit(2)
		}
		status = ee.ExitCode()
	}
	end := time.Now()
	var faults int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		faults = ru.Majflt
	}
	note("end", end, status, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime(), faults, waited)
	os.Exit(status)
}

// runDelay waits for process pid to exit without reaping it (waitid with
// WNOWAIT), and returns the time its main thread waited on a run queue,
// from /proc/PID/schedstat ("cpu_ns run_delay_ns slices"), or -1 µs.
// Only the main thread's: the kernel keeps no sum of the other threads'
// there, so for a Go program it is a lower bound of the whole's.
func runDelay(pid int) time.Duration {
	const pPID, wExited, wNoWait = 1, 4, 0x01000000
	var info [128]byte // a siginfo_t, unread
	if _, _, e := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid), uintptr(unsafe.Pointer(&info[0])), wExited|wNoWait, 0, 0); e != 0 {
		return -time.Microsecond
	}
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/schedstat")
	f := strings.Fields(string(data))
	if err != nil || len(f) < 2 {
		return -time.Microsecond
	}
	ns, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return -time.Microsecond
	}
	return time.Duration(ns)
}
