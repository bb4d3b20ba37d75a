package shell

import "testing"

// TestDebugRunners: Debuggers and tracers: the program traced, and gdb's shell commands (shell, !, pipe).
func TestDebugRunners(t *testing.T) {
	t.Parallel()
	readsAs(t, []readCase{
		{`gdb --args tmux ls`, `gdb --args tmux ls; tmux ls [gdb]`},
		{`gdb -ex 'shell tmux ls'`, `gdb -ex shell tmux ls; tmux ls [gdb]`},
		{`gdb -ex '!tmux ls'`, `gdb -ex !tmux ls; tmux ls [gdb]`},
		{`gdb -batch -ex run --args tmux ls`, `gdb -batch -ex run --args tmux ls; tmux ls [gdb]`},
		{`gdb prog`, `gdb prog`},
		{`gdb -ex 'pipe bt | tmux ls'`, `gdb -ex pipe bt | tmux ls; bt [gdb]; tmux ls [gdb]`},
		{`strace -o /dev/null tmux ls`, `strace -o /dev/null tmux ls; tmux ls [strace]`},
		{`strace -p 1`, `strace -p 1`},
		{`ltrace tmux ls`, `ltrace tmux ls; tmux ls [ltrace]`},
		{`valgrind --leak-check=full tmux ls`, `valgrind --leak-check=full tmux ls; tmux ls [valgrind]`},
	})
}
