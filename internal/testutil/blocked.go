package testutil

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// WaitBlocked waits until a goroutine of this process waits in a select
// or a channel operation with fn on its stack: fn is a function as
// goroutine stacks name it ("orch.(*Manager).Wait", matched as the end of
// the frame's name). It is the positive sign that a call has got as far
// as waiting, to check next that it does not return before what should
// end it: a sleep would only hope for it.
func WaitBlocked(t testing.TB, timeout time.Duration, fn string) {
	t.Helper()
	WaitFor(t, timeout, func() (bool, string) {
		return Blocked(fn), "no goroutine is waiting in " + fn
	})
}

// Blocked reports whether a goroutine waits in a select or a channel
// operation with fn on its stack.
func Blocked(fn string) bool {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	for _, g := range strings.Split(string(buf), "\n\n") {
		lines := strings.Split(g, "\n")
		if len(lines) < 2 || !parked(lines[0]) {
			continue
		}
		for _, l := range lines[1:] {
			if strings.HasPrefix(l, "\t") {
				continue // the file and line of the frame above
			}
			name := l // "pkg.(*T).F(args)": the arguments hold no parentheses
			if i := strings.LastIndex(l, "("); i > 0 {
				name = l[:i]
			}
			if strings.HasSuffix(name, fn) {
				return true
			}
		}
	}
	return false
}

// parked reports whether a goroutine header ("goroutine 7 [select, 2
// minutes]:") says it waits in a select or on a channel.
func parked(header string) bool {
	for _, s := range []string{"[select", "[chan receive", "[chan send"} {
		if strings.Contains(header, s) {
			return true
		}
	}
	return false
}
