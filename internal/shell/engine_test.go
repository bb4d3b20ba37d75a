package shell

import (
	"slices"
	"testing"
)

// TestEngine: the engine's own reading of builtins, expansions, loops and
// redirections, apart from any program it knows: what a variable holds
// when st can tell (and a hole when not), each loop's body read for each
// pass st can count (twice when it cannot), a file the text wrote read
// back when a shell runs it.
func TestEngine(t *testing.T) {
	t.Parallel()
	readsAs(t, []readCase{
		{`mapfile -t a <<< $'x\ny'; echo ${a[1]}`, `mapfile -t a; echo y`},
		{`readarray a < f; echo ${a[0]}`, `readarray a; echo <${a[0]}>`},
		{`x=1; unset x; echo $x`, `unset x; echo <$x>`},
		{`unset -v y`, `unset -v y`},
		{`hash -r; hash tmux`, `hash -r; hash tmux`},
		{`set -e; set -o pipefail; echo hi`, `set -e; set -o pipefail; echo hi`},
		{`set -- a b c; shift; echo $1 $#`, `set -- a b c; shift; echo b 2`},
		{`set -- a b; shift 2; echo $#`, `set -- a b; shift 2; echo 0`},
		{`shift 5`, `shift 5`},
		{`set -x; set +x; echo $-`, `set -x; set +x; echo <$->`},
		{`set -f; echo *`, `set -f; echo <*>`},
		{`echo -n a; echo -e 'b\tc'; echo -E x`, `echo -n a; echo -e b\tc; echo -E x`},
		{`echo -ne 'a\x41'`, `echo -ne a\x41`},
		{`read -a arr <<< 'p q'; echo ${arr[1]}`, `read -a arr; echo <${arr[1]}>`},
		{`read -p 'x' -t 1 -n 2 v; echo $v`, `read -p x -t 1 -n 2 v; echo <$v>`},
		{`source f.sh`, `source f.sh`},
		{`. ./lib.sh a b`, `. ./lib.sh a b`},
		{`source $F`, `source <$F>`},
		{`x=$((1+2*3)); echo $x`, `echo <$((1+2*3))>`},
		{`echo $((x++)) $x`, `echo <$((x++))> <$x>`},
		{`a=5; echo $((a<<1)) $((a%3)) $((a>3?1:0))`, `echo <$((a<<1))> <$((a%3))> <$((a>3?1:0))>`},
		{`echo ${#X}`, `echo <${#X}>`},
		{`v=abc; echo ${v:1:1} ${v#a} ${v%c} ${v/b/B} ${v^^}`, `echo b bc ab aBc ABC`},
		{`echo ${U:-d} ${U:=e} $U ${U:+y} ${Z?}`, `echo <${U:-d}> <${U:=e}> <$U> <${U:+y}> <${Z?}>`},
		{`export A=1; echo $A`, `export; echo 1`},
		{`readonly R=2; echo $R`, `readonly; echo 2`},
		{`while false; do tmux ls; done; echo ok`, `false; tmux ls; false; tmux ls; echo ok`},
		{`until true; do :; done`, `true; :; true; :`},
		{`for ((i=0;i<2;i++)); do echo $i; done`, `echo <$i>; echo <$i>`},
		{`select x in a b; do tmux ls; break; done`, `tmux ls; break; tmux ls; break`},
		{`[[ a == a ]] && echo same`, `echo same`},
		{`case a in a) echo A;; esac`, `echo A`},
		{`(cd /tmp; pwd)`, `cd /tmp; pwd`},
		{`echo a > f; cat f`, `echo a; cat f`},
		{`echo x >> f; bash f`, `echo x; bash f; TEXT<(the file f this command wrote)> [bash]`},
		{"cat <<EOF\n$HOME\nEOF", `cat`},
		{"cat <<'E'\n$x\nE", `cat`},
		{`echo {a,b}c`, `echo ac bc`},
		{`echo $'\101'`, `echo A`},
		{`printf '%s\n' a b`, `printf %s\n a b`},
		{`type tmux; which tmux`, `type tmux; which tmux`},
		{`trap - EXIT`, `trap - EXIT`},
		{`alias l='ls -l'; l`, `alias l=ls -l; ls -l [alias l]`},
		{`getopts ab o`, `getopts ab o`},
		{`let x=2+3; echo $x`, `echo <$x>`},
		{`printf -v y %d 5; echo $y`, `printf -v y %d 5; echo 5`},
		{`cd; pwd`, `cd; pwd`},
		{`cd - `, `cd -`},
		{`pushd /tmp; popd`, `pushd /tmp; popd`},
		{`coproc tmux ls`, `tmux ls`},
		{`time tmux ls`, `tmux ls`},
		{`! tmux ls`, `tmux ls`},
		{`tmux ls &`, `tmux ls`},
		{`wait`, `wait`},
		{`exit 3`, `exit 3`},
		{`return`, `return`},
		{`f() { return 1; }; f || echo no`, `f; return 1 [function f]; echo no`},
		{`eval "$X"`, `eval <$X>; TEXT<$X> [eval]`},
		{`x=(a b); x+=(c); echo ${x[@]} ${!x[@]}`, `echo <${x[@]}> <${!x[@]}>`},
		{`IFS= read -r line < /etc/hostname`, `read -r line`},
		{`echo ${!P*}`, `echo <${!P*}>`},
		{`shopt -s extglob; echo hi`, `shopt -s extglob; echo hi`},
		{`umask 022`, `umask 022`},
		{`ulimit -n 10`, `ulimit -n 10`},
		{`kill -9 $$`, `kill -9 <$$>`},
		{`printf -- '-%s' a`, `printf -- -%s a`},
		{`echo $RANDOM $SECONDS $LINENO`, `echo <$RANDOM> <$SECONDS> <$LINENO>`},
	})
}

// TestArgMatching: what a word could be, with holes standing for any text
// and globs matching as they would.
func TestArgMatching(t *testing.T) {
	t.Parallel()
	hole := HoleArg(&Hole{})
	cases := []struct {
		a    Arg
		s    string
		want bool
	}{
		{Lit("kill-server"), "kill-server", true},
		{Lit("kill"), "kill-server", false},
		{Concat(Lit("kill-"), hole), "kill-server", true},
		{Concat(Lit("kill-"), hole), "list-sessions", false},
		{Concat(hole, Lit("-server")), "kill-server", true},
		{Concat(Lit("kill-serverX"), hole), "kill-server", false},
		{Arg{pieces: []piece{{lit: "k*"}}, Glob: true}, "kill-server", true},
		{Arg{pieces: []piece{{lit: "k?ll-server"}}, Glob: true}, "kill-server", true},
		{Arg{pieces: []piece{{lit: "[kx]ill-server"}}, Glob: true}, "kill-server", true},
		{Arg{pieces: []piece{{lit: "x*"}}, Glob: true}, "kill-server", false},
	}
	for _, c := range cases {
		if got := c.a.Could(c.s); got != c.want {
			t.Errorf("%s could be %q: %v, want %v", c.a, c.s, got, c.want)
		}
	}
	if !Concat(Lit("a"), hole).CouldAny("x", "ab") || Lit("a").CouldAny("x", "y") {
		t.Error("CouldAny is Could of any")
	}
	if before, ok := Concat(Lit("k=v"), hole).CutAt("="); !ok || before.String() != "k" {
		t.Errorf("CutAt: %s %v", before, ok)
	}
	if _, ok := Concat(hole, Lit("v")).CutAt("="); ok {
		t.Error("CutAt found a separator that is not there")
	}
	if n := Concat(Lit("ab"), hole, Lit("c")).Len(); n != 3 {
		t.Errorf("Len counts the known text: %d", n)
	}
}

// TestUnexplained: a word the parse did not account for as bash would (a
// here-document whose delimiter bash reads otherwise) is named; a word in
// the parse is not.
func TestUnexplained(t *testing.T) {
	t.Parallel()
	env := Env{Cwd: "/w"}
	if w, ok := Read("tmux ls # kill-server", env).Unexplained("kill-server"); ok {
		t.Errorf("a comment bash sees as one was taken for unexplained: %q", w)
	}
	if w, ok := Read("echo kill-server", env).Unexplained("KILL-SERVER"); ok {
		t.Errorf("a word of the parse was taken for unexplained: %q", w)
	}
	if _, ok := Read("echo hi", env).Unexplained("kill-server"); ok {
		t.Error("a word that is not there was found")
	}
	if w, ok := Read("tmux ls #x; kill-server", env).Unexplained("kill-server"); ok {
		t.Errorf("a comment's text is explained: %q", w)
	}
}

// TestReadText: text another command runs (tmux run-shell's) is read with
// that command's variables and folder, the variables given set and those
// named unset, and the command's way in.
func TestReadText(t *testing.T) {
	t.Parallel()
	s := Read("cd /srv; X=kill-server; tmux run-shell 'tmux $X'", Env{Cwd: "/w", Vars: map[string]string{"Z": "zzz"}})
	from := s.Cmds[len(s.Cmds)-1]
	out := s.ReadText(Lit("tmux $X $Y; echo $Z; pwd"), from, "run-shell", map[string]Arg{"Y": Lit("-a")}, "Z")
	var got []string
	for _, c := range out.Cmds {
		got = append(got, c.Args[0].String())
		if c.Dir.String() != "/srv" {
			t.Errorf("%s runs in %s, not /srv", c.Args[0], c.Dir)
		}
		if !slices.Equal(c.Via, []string{"run-shell"}) {
			t.Errorf("%s came by %v", c.Args[0], c.Via)
		}
	}
	if out.Err != nil || len(out.Cmds) != 3 || out.Cmds[0].Args[1].String() != "kill-server" {
		t.Fatalf("ReadText: %v %v", got, out.Err)
	}
	if a := out.Cmds[0].Args; len(a) != 3 || a[2].String() != "-a" {
		t.Errorf("Y was not set: %v", a)
	}
	if a := out.Cmds[1].Args; len(a) > 1 && a[1].String() == "zzz" {
		t.Errorf("Z was not unset: echo $Z gave %v", a)
	}
	if a := s.ReadText(Lit("echo $Z"), from, "run-shell", nil).Cmds[0].Args; len(a) != 2 || a[1].String() != "zzz" {
		t.Errorf("Z is the environment's without unset: echo $Z gave %v", a)
	}
	top := s.ReadText(Lit("tmux ls"), nil, "hook", nil)
	if len(top.Cmds) != 1 || !slices.Equal(top.Cmds[0].Via, []string{"hook"}) {
		t.Errorf("ReadText from nothing: %+v", top.Cmds)
	}
}

// TestDiffPaths: the files a unified diff changes, once each, from the
// repository's root; a created or deleted file by its real side.
func TestDiffPaths(t *testing.T) {
	t.Parallel()
	patch := "diff --git a/x.go b/x.go\n--- a/x.go\n+++ b/x.go\n@@ -1 +1 @@\n-a\n+b\n" +
		"--- /dev/null\n+++ b/new.txt\t2026-01-01\n@@ -0,0 +1 @@\n+n\n" +
		"--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-g\n"
	got := DiffPaths(patch)
	for _, want := range []string{"x.go", "new.txt", "gone.txt"} {
		if !slices.Contains(got, want) {
			t.Errorf("DiffPaths: %v has no %s", got, want)
		}
	}
	if len(got) != 3 {
		t.Errorf("DiffPaths: %v, want each file once", got)
	}
}
