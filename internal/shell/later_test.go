package shell

import "testing"

// TestLaterRunners: Commands run elsewhere or later: ssh's remote command, at and batch's standard input, crontab's lines.
func TestLaterRunners(t *testing.T) {
	t.Parallel()
	readsAs(t, []readCase{
		{`ssh host`, `ssh host`},
		{`ssh -t host 'tmux ls'`, `ssh -t host tmux ls; tmux ls [ssh]`},
		{`ssh -p 22 -o X=1 host tmux ls`, `ssh -p 22 -o X=1 host tmux ls; tmux ls [ssh]`},
		{`ssh -l bob host tmux ls`, `ssh -l bob host tmux ls; tmux ls [ssh]`},
		{`ssh -N -L 1:h:2 host`, `ssh -N -L 1:h:2 host`},
		{`at now <<< 'tmux ls'`, `at now; tmux ls [at]`},
		{`at -f job.sh now`, `at -f job.sh now`},
		{`echo 'tmux ls' | batch`, `echo tmux ls; batch; tmux ls [batch]`},
		{`at -l`, `at -l`},
		{`crontab -l`, `crontab -l`},
		{`crontab -r`, `crontab -r`},
		{`crontab f`, `crontab f`},
		{`echo '@reboot tmux ls' | crontab -`, `echo @reboot tmux ls; crontab -; tmux ls [crontab]`},
		{`printf 'SHELL=/bin/bash\n# c\n* * * * * tmux ls\n' | crontab -`, `printf SHELL=/bin/bash\n# c\n* * * * * tmux ls\n; crontab -; tmux ls [crontab]`},
		{`crontab -u bob -`, `crontab -u bob -`},
	})
}
