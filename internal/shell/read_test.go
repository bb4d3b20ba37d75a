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
		// What builtins change: the reader must follow it, or it would
		// judge words it no longer knows.
		{`set -- x tmux kill-server; shift; "$@"`, "set -- x tmux kill-server; shift; tmux kill-server"},
		{"x=a; let x=1; echo $x", "echo <$x>"},
		{"x=a; command let x=1; echo $x", "command let x=1; let x=1 [command]; echo <$x>"},
		{"x=a; (( x=1 )); echo $x $(( x++ ))", "echo <$x> <$(( x++ ))>"},
		{"o=a; getopts ab o; echo $o", "getopts ab o; echo <$o>"},
		{"cd /a; popd; echo $PWD", "cd /a; popd; echo <popd>"},
		{"builtin export X=1; echo $X", "builtin export X=1; export X=1 [builtin]; echo 1"},
		{"alias t='echo hi'; unalias t; t", "alias t=echo hi; unalias t; t"},
		{"enable -f x.so tmux; tmux", "enable -f x.so tmux; TEXT<enable -f x.so tmux> [enable -f]; tmux"},
		{"x='$(tmux kill-server)'; echo ${x@P}", "tmux kill-server [${x@P},$(...)]; echo <${x@P}>"},
		{"x=$(date); echo ${x:-none}", "date [$(...)]; echo <$(date)>"},
		{"declare -l c=KILL; typeset -u d=kill; declare -i n=3; echo $c $d $n", "declare -l; typeset -u; declare -i; echo kill KILL <$n>"},
		{"echo {1..3} {a..c} {1..10..4}", "echo 1 2 3 a b c 1 5 9"},
		// A script the command writes, then runs: read when it is shell.
		{"printf '#!/bin/sh\\ntmux kill-server\\n' > x.sh; ./x.sh", "printf #!/bin/sh\\ntmux kill-server\\n; ./x.sh; tmux kill-server [/w/x.sh]"},
		{"printf '#!/usr/bin/env bash\\ntmux ls\\n' > x.sh; ./x.sh", "printf #!/usr/bin/env bash\\ntmux ls\\n; ./x.sh; tmux ls [/w/x.sh]"},
		{"printf '#!/usr/bin/python3\\nprint(1)\\n' > y; ./y", "printf #!/usr/bin/python3\\nprint(1)\\n; ./y"},
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

// TestRunners: every program of the runners table, and every builtin that
// runs text, is read through: tmux kill-server run by it is found, as
// the guard must see it. A runner added without a row here fails.
func TestRunners(t *testing.T) {
	t.Parallel()
	spell := map[string]string{
		"sudo": "sudo -u root tmux kill-server", "doas": "doas tmux kill-server", "su": "su -c 'tmux kill-server'",
		"runuser": "runuser -u bob -- tmux kill-server", "env": "env -i A=1 tmux kill-server", "nohup": "nohup tmux kill-server",
		"setsid": "setsid -f tmux kill-server", "nice": "nice -n 5 tmux kill-server", "ionice": "ionice -c 3 tmux kill-server",
		"chrt": "chrt 10 tmux kill-server", "taskset": "taskset 0x1 tmux kill-server", "timeout": "timeout -s KILL 5 tmux kill-server",
		"stdbuf": "stdbuf -oL tmux kill-server", "unbuffer": "unbuffer tmux kill-server", "chronic": "chronic tmux kill-server",
		"eatmydata": "eatmydata tmux kill-server", "fakeroot": "fakeroot tmux kill-server", "torsocks": "torsocks tmux kill-server",
		"proxychains": "proxychains tmux kill-server", "proxychains4": "proxychains4 -f x tmux kill-server",
		"nocache": "nocache tmux kill-server", "caffeinate": "caffeinate -i tmux kill-server", "time": "/usr/bin/time -p tmux kill-server",
		"command": "command tmux kill-server", "builtin": "builtin eval 'tmux kill-server'", "exec": "exec -a x tmux kill-server",
		"busybox": "busybox tmux kill-server", "toybox": "toybox tmux kill-server", "xargs": "echo kill-server | xargs tmux",
		"find": "find . -exec tmux kill-server \\;", "watch": "watch -n 1 tmux kill-server", "flock": "flock /tmp/l tmux kill-server",
		"unshare": "unshare -r tmux kill-server", "nsenter": "nsenter -t 1 -m tmux kill-server", "chroot": "chroot / tmux kill-server",
		"setpriv": "setpriv --reuid=1 tmux kill-server", "prlimit": "prlimit --nofile=10 tmux kill-server",
		"numactl": "numactl -N 0 tmux kill-server", "systemd-run": "systemd-run --user tmux kill-server",
		"firejail": "firejail tmux kill-server", "sg": "sg wheel 'tmux kill-server'", "dbus-run-session": "dbus-run-session tmux kill-server",
		"xvfb-run": "xvfb-run -a tmux kill-server", "catchsegv": "catchsegv tmux kill-server", "rlwrap": "rlwrap tmux kill-server",
		"strace": "strace -f -o /dev/null tmux kill-server", "ltrace": "ltrace tmux kill-server", "valgrind": "valgrind tmux kill-server",
		"gdb": "gdb -ex 'shell tmux kill-server'", "ssh": "ssh localhost tmux kill-server", "script": "script -c 'tmux kill-server' /dev/null",
		"parallel": "parallel tmux ::: kill-server", "git": "git -c core.pager='tmux kill-server' log",
		"pkexec": "pkexec tmux kill-server", "capsh": "capsh -- -c 'tmux kill-server'", "ip": "ip netns exec ns1 tmux kill-server",
		"cgexec": "cgexec -g cpu:x tmux kill-server", "systemd-inhibit": "systemd-inhibit tmux kill-server",
		"dbus-launch": "dbus-launch tmux kill-server", "hyperfine": "hyperfine -w 1 'tmux kill-server'",
		"entr": "echo f | entr -s 'tmux kill-server'", "watchexec": "watchexec -- tmux kill-server", "fd": "fd -x tmux kill-server",
		"fdfind": "fdfind . -x tmux kill-server", "screen": "screen -dm tmux kill-server", "dtach": "dtach -n /tmp/s tmux kill-server",
		"at": "echo 'tmux kill-server' | at now", "batch": "batch <<< 'tmux kill-server'",
		"crontab": "echo '* * * * * tmux kill-server' | crontab -", "npx": "npx -c 'tmux kill-server'",
		"make": "make -f <(printf 'x:\\n\\ttmux kill-server\\n')", "gmake": "gmake -f - <<< $'x:\\n\\ttmux kill-server'",
		"eval": "eval 'tmux kill-server'", "source": "source <(echo tmux kill-server)", ".": ". /dev/stdin <<< 'tmux kill-server'",
		"trap": "trap 'tmux kill-server' EXIT", "alias": "alias t='tmux kill-server'\nt",
	}
	for _, s := range Shells {
		spell[s] = s + " -c 'tmux kill-server'"
	}
	for _, name := range Runners() {
		src, ok := spell[name]
		if !ok {
			t.Errorf("the runner %s has no spelling here: add one that runs tmux kill-server through it", name)
			continue
		}
		if !readsKill(t, src) {
			t.Errorf("%s: Read(%q) found no tmux kill-server (%s)", name, src, show(src))
		}
	}
	// git's subcommands and keys that run shell text, and case branches.
	for _, src := range []string{
		"git rebase -x 'tmux kill-server' main", "git rebase --exec='tmux kill-server' main", "git bisect run tmux kill-server",
		"git submodule foreach 'tmux kill-server'", "git filter-branch --tree-filter 'tmux kill-server' HEAD",
		"git difftool -x 'tmux kill-server'", "git config alias.k '!tmux kill-server'", "git -c credential.helper='!tmux kill-server' fetch",
		"case $X in a) tmux kill-server;; *) ;; esac",
	} {
		if !readsKill(t, src) {
			t.Errorf("Read(%q) found no tmux kill-server (%s)", src, show(src))
		}
	}
}

// readsKill reports whether Read finds tmux kill-server run by src.
func readsKill(t *testing.T, src string) bool {
	s := Read(src, Env{Cwd: "/w"})
	if s.Err != nil {
		t.Errorf("Read(%q): %v", src, s.Err)
	}
	for _, c := range s.Cmds {
		if len(c.Args) == 2 && c.Args[0].String() == "tmux" && c.Args[1].String() == "kill-server" {
			return true
		}
	}
	return false
}
