package shell

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestDump prints the facts of $ST_SHELL_DUMP (a debugging aid).
func TestDump(t *testing.T) {
	src := os.Getenv("ST_SHELL_DUMP")
	if src == "" {
		t.Skip("set ST_SHELL_DUMP to a command to print what st reads in it")
	}
	s := Read(src, Env{Cwd: "/w", Vars: map[string]string{"TMUX": "/tmp/tmux-0/default,1,0", "UID": "0"}})
	fmt.Println("err:", s.Err)
	for _, c := range s.Cmds {
		fmt.Println(dumpCmd(c))
	}
	for _, w := range Writes(s.Cmds) {
		fmt.Printf("write %q dir=%q tree=%v root=%v what=%s\n", w.Path.String(), w.Dir.String(), w.Tree, w.Root, w.What)
	}
}

func dumpCmd(c *Cmd) string {
	var b strings.Builder
	if c.Text != nil {
		fmt.Fprintf(&b, "TEXT %q", c.Text.String())
	}
	for i, a := range c.Args {
		if i > 0 {
			b.WriteString(" ")
		}
		s, ok := a.Known()
		if ok {
			fmt.Fprintf(&b, "%q", s)
		} else {
			fmt.Fprintf(&b, "<%s split=%v glob=%v>", a.String(), a.Split, a.Glob)
		}
	}
	fmt.Fprintf(&b, "  via=%v wr=%v dir=%q stdin=%q other=%v", c.Via, c.Wrappers, c.Dir.String(), c.Stdin.String(), c.OtherUser)
	t, st := c.Getenv("TMUX")
	fmt.Fprintf(&b, " TMUX=%q/%d", t.String(), st)
	return b.String()
}
