package shell

import "testing"

// TestShellRunners: The shells' -c text and standard input, the builtins that run a command here, multi-call binaries and terminal programs.
func TestShellRunners(t *testing.T) {
	t.Parallel()
	readsAs(t, []readCase{
		{`sh -c 'tmux ls' a b`, `sh -c tmux ls a b; tmux ls [sh]`},
		{`bash script.sh a`, `bash script.sh a`},
		{`bash -s < f`, `bash -s; TEXT<<f> [bash]`},
		{`echo tmux ls | bash`, `echo tmux ls; bash; tmux ls [bash]`},
		{`bash -e -c 'tmux ls'`, `bash -e -c tmux ls; tmux ls [bash]`},
		{`bash -o pipefail -c 'tmux ls'`, `bash -o pipefail -c tmux ls; tmux ls [bash]`},
		{`bash --norc -c 'tmux ls'`, `bash --norc -c tmux ls; tmux ls [bash]`},
		{`bash -c`, `bash -c`},
		{`bash -xc 'tmux ls'`, `bash -xc tmux ls; tmux ls [bash]`},
		{`fish -c 'tmux ls'`, `fish -c tmux ls; tmux ls [fish]`},
		{`zsh -l`, `zsh -l`},
		{`command -v tmux`, `command -v tmux`},
		{`command tmux ls`, `command tmux ls; tmux ls [command]`},
		{`exec tmux ls`, `exec tmux ls; tmux ls [exec]`},
		{`exec -a x tmux ls`, `exec -a x tmux ls; tmux ls [exec]`},
		{`builtin echo hi`, `builtin echo hi; echo hi [builtin]`},
		{`busybox sh -c 'tmux ls'`, `busybox sh -c tmux ls; sh -c tmux ls [busybox]; tmux ls [busybox,sh]`},
		{`busybox`, `busybox`},
		{`toybox ls`, `toybox ls; ls [toybox]`},
		{`script -qc 'tmux ls' /dev/null`, `script -qc tmux ls /dev/null; tmux ls [script]`},
		{`script -c 'tmux ls'`, `script -c tmux ls; tmux ls [script]`},
		{`script out.log`, `script out.log`},
		{`screen -ls`, `screen -ls`},
		{`screen -X quit`, `screen -X quit`},
		{`dtach -n /tmp/s tmux ls`, `dtach -n /tmp/s tmux ls; tmux ls [dtach]`},
		{`dtach -a /tmp/s`, `dtach -a /tmp/s`},
		// A cluster's last letter takes the next word (-dmS NAME): the command was read as NAME tmux ... before, and the guard let screen -dmS s tmux kill-server by.
		{`screen -dmS s tmux ls`, `screen -dmS s tmux ls; tmux ls [screen]`},
		{`screen -dmSs tmux ls`, `screen -dmSs tmux ls; tmux ls [screen]`},
	})
}
