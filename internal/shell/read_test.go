package shell

import (
	"strings"
	"testing"
)

// show prints what Read found: each command's words (holes as written,
// in <>), with how it came to run.
func show(src string) string {
	s := Read(src, Env{Cwd: "/w", Vars: map[string]string{"TMUX": "/tmp/tmux-0/default,1,0"}, Unset: []string{"TMUX_TMPDIR"}})
	var out []string
	for _, c := range s.Cmds {
		var words []string
		if c.Text != nil {
			words = append(words, "TEXT<"+c.Text.String()+">")
		}
		for _, a := range c.Args {
			if k, ok := a.Known(); ok {
				words = append(words, k)
			} else {
				words = append(words, "<"+a.String()+">")
			}
		}
		line := strings.Join(words, " ")
		if len(c.Via) > 0 {
			line += " [" + strings.Join(c.Via, ",") + "]"
		}
		out = append(out, line)
	}
	if s.Err != nil {
		out = append(out, "ERR "+s.Err.Error())
	}
	return strings.Join(out, "; ")
}

func TestRead(t *testing.T) {
	t.Parallel()
	cases := []struct{ src, want string }{
		{"tmux kill-server", "tmux kill-server"},
		{"c=KILL; echo ${c,,} $c", "echo kill KILL"},
		{"read a b <<< 'x y z'; echo $a $b", "read a b; echo x y z"},
		// A prefix IFS is the read's own; the shell's stays.
		{`IFS=, read s p r <<< "$TMUX"; echo $p; echo a,b`, "read s p r; echo 1; echo a,b"},
		{"printf -v c '%s-%s' a b; echo $c", "printf -v c %s-%s a b; echo a-b"},
		{`set -- a 'b c'; echo "$@" $#`, "set -- a b c; echo a b c 2"},
		{"IFS=:; x=a:b; echo $x", "echo a b"},
		{"a=(x y); echo ${a[1]} ${#a[@]}", "echo y 2"},
		{"echo $HOME", "echo <$HOME>"},
		{"echo $(date)", "date [$(...)]; echo <$(date)>"},
		{"echo $(echo hi)", "echo hi [$(...)]; echo hi"},
		{"$X ls", "<$X> ls"},
		{"sudo -u bob env FOO=1 nohup tmux ls", "sudo -u bob env FOO=1 nohup tmux ls; env FOO=1 nohup tmux ls [sudo]; nohup tmux ls [sudo,env]; tmux ls [sudo,env,nohup]"},
		{"bash -c 'echo $0 $1' a b", "bash -c echo $0 $1 a b; echo <$0> b [bash]"}, // $0 is not followed
		{`sh -c "$X"`, "sh -c <$X>; TEXT<$X> [sh]"},
		{"eval 'x=1'; echo $x", "eval x=1; echo 1"},
		{"f() { echo $1; }; f hi", "f hi; echo hi [function f]"},
		{"for i in a b; do echo $i; done", "echo a; echo b"},
		{"echo tmux ls | sh", "echo tmux ls; sh; tmux ls [sh]"},
		{"cd sub && pwd", "cd sub; pwd"},
		{"find . -name x -exec rm {} \\;", "find . -name x -exec rm {} ;; rm <{}> [find]"},
		{"echo a > f; . ./f", "echo a; . ./f; a [.]"},
		{"x=$x$x", ""},
		{"echo 'unterminated", "ERR 1:6: reached EOF without closing quote `'`"},
		{strings.Repeat("(", 2000), "ERR the command nests too deeply for st to check (2000 places that may open a level, outside quoted text; at most 1500)"},
	}
	for _, c := range cases {
		if got := show(c.src); got != c.want {
			t.Errorf("Read(%.60q)\n got %s\nwant %s", c.src, got, c.want)
		}
	}
}

// TestFileSubstitution: $(<file) is the file's content, which st does not
// know: a hole whose From is the redirection that reads it (a reader of
// pids reads that file), never the empty text of a command that prints
// nothing.
func TestFileSubstitution(t *testing.T) {
	t.Parallel()
	s := Read("kill $(<server.pid)", Env{Cwd: "/w"})
	if s.Err != nil || len(s.Cmds) != 2 {
		t.Fatalf("Read: %v, %d commands", s.Err, len(s.Cmds))
	}
	hs := s.Cmds[1].Args[1].Holes()
	if len(hs) != 1 || hs[0].Kind != FromOutput || len(hs[0].From) != 1 {
		t.Fatalf("the pid's holes: %+v", hs)
	}
	if rd := hs[0].From[0].Redirs; len(rd) != 1 || rd[0].Op != "<" || rd[0].Target.String() != "server.pid" {
		t.Errorf("the hole comes from %+v, not the file", rd)
	}
}
