package shell

import "testing"

// TestGitRunners: git: command-valued keys (-c, config), aliases with !, rebase --exec, bisect run, submodule foreach, filter-branch's filters, difftool -x; a plain subcommand runs nothing.
func TestGitRunners(t *testing.T) {
	t.Parallel()
	readsAs(t, []readCase{
		{`git log`, `git log`},
		{`git -C /x config core.editor vim`, `git -C /x config core.editor vim; vim [git]`},
		{`git config --global core.sshCommand 'ssh -i k'`, `git config --global core.sshCommand ssh -i k; ssh -i k [git]`},
		{`git -c core.sshCommand='tmux ls' fetch`, `git -c core.sshCommand=tmux ls fetch; tmux ls [git]`},
		{`git rebase -i --exec 'make test' main`, `git rebase -i --exec make test main; make test [git]`},
		{`git rebase -x 'tmux ls' main`, `git rebase -x tmux ls main; tmux ls [git]`},
		{`git bisect run make`, `git bisect run make; make [git]`},
		{`git bisect start`, `git bisect start`},
		{`git submodule foreach --recursive 'git pull'`, `git submodule foreach --recursive git pull; git pull [git]`},
		{`git filter-branch --env-filter 'x=1' HEAD`, `git filter-branch --env-filter x=1 HEAD`},
		{`git filter-branch --msg-filter 'tmux ls' --index-filter 'true' HEAD`, `git filter-branch --msg-filter tmux ls --index-filter true HEAD; tmux ls [git]; true [git]`},
		{`git difftool -x 'tmux ls' HEAD`, `git difftool -x tmux ls HEAD; tmux ls [git]`},
		{`git config alias.k '!tmux ls'`, `git config alias.k !tmux ls; tmux ls [git]`},
		{`git config alias.co checkout`, `git config alias.co checkout`},
		{`git -c alias.k='!tmux ls' k`, `git -c alias.k=!tmux ls k; tmux ls [git]`},
		{`git config core.hooksPath /tmp/h`, `git config core.hooksPath /tmp/h; /tmp/h [git]`},
		{`git config --get core.editor`, `git config --get core.editor`},
		// difftool's command attached (--extcmd=CMD, -xCMD) was not read before.
		{`git difftool --extcmd='tmux ls'`, `git difftool --extcmd=tmux ls; tmux ls [git]`},
		{`git difftool -x'tmux ls'`, `git difftool -xtmux ls; tmux ls [git]`},
		{`git mergetool --extcmd=x`, `git mergetool --extcmd=x; x [git]`},
	})
}
