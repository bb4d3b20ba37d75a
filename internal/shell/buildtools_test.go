package shell

import "testing"

// TestBuildRunners: Build tools: the recipe lines of a makefile st can read (--eval, a process substitution), npx -c, hyperfine's commands and --prepare, --setup, --cleanup.
func TestBuildRunners(t *testing.T) {
	t.Parallel()
	readsAs(t, []readCase{
		{`make`, `make`},
		{`make -f Makefile`, `make -f Makefile`},
		{`make --eval=$'x:\n\ttmux ls'`, "make --eval=x:\n\ttmux ls; tmux ls [make]"},
		{`make -f <(printf 'a:\n\t@tmux ls\n')`, `printf a:\n\t@tmux ls\n [<(...)]; make -f <<(printf 'a:\n\t@tmux ls\n')>; tmux ls [make]`},
		{`make -C sub test`, `make -C sub test`},
		{`make -f $F`, `make -f <$F>`},
		{`npx -c 'tmux ls'`, `npx -c tmux ls; tmux ls [npx]`},
		{`npx --call='tmux ls'`, `npx --call=tmux ls; tmux ls [npx]`},
		{`npx cowsay`, `npx cowsay`},
		{`npx -p x -c 'tmux ls'`, `npx -p x -c tmux ls; tmux ls [npx]`},
		{`hyperfine 'tmux ls' 'ls'`, `hyperfine tmux ls ls; tmux ls [hyperfine]; ls [hyperfine]`},
		{`hyperfine --prepare 'sync' 'ls'`, `hyperfine --prepare sync ls; sync [hyperfine]; ls [hyperfine]`},
		{`hyperfine -p 'sync' --setup x --cleanup y 'ls'`, `hyperfine -p sync --setup x --cleanup y ls; sync [hyperfine]; x [hyperfine]; y [hyperfine]; ls [hyperfine]`},
		{`hyperfine -N 'ls'`, `hyperfine -N ls; ls [hyperfine]`},
		{`hyperfine -L n 1,2 'sleep {n}'`, `hyperfine -L n 1,2 sleep {n}; sleep {n} [hyperfine]`},
	})
}
