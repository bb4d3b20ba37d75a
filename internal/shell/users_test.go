package shell

import "testing"

// TestUserRunners: Programs that run a command as another user: the command is read (sudo -l, -e and a shell with no command run none st can tell).
func TestUserRunners(t *testing.T) {
	t.Parallel()
	readsAs(t, []readCase{
		{`sudo -u bob -E tmux ls`, `sudo -u bob -E tmux ls; tmux ls [sudo]`},
		{`sudo -i`, `sudo -i`},
		{`sudo -s`, `sudo -s`},
		{`sudo VAR=1 tmux ls`, `sudo VAR=1 tmux ls; tmux ls [sudo]`},
		{`sudo -- tmux ls`, `sudo -- tmux ls; tmux ls [sudo]`},
		{`sudo -l`, `sudo -l`},
		{`sudo -e /etc/hosts`, `sudo -e /etc/hosts`},
		{`doas -u bob tmux ls`, `doas -u bob tmux ls; tmux ls [doas]`},
		{`doas -s`, `doas -s`},
		{`su - bob`, `su - bob`},
		{`su -c 'tmux ls' bob`, `su -c tmux ls bob; tmux ls [su]`},
		{`su bob -s /bin/bash -c 'tmux ls'`, `su bob -s /bin/bash -c tmux ls; tmux ls [su]`},
		{`runuser -u bob -- tmux ls`, `runuser -u bob -- tmux ls; tmux ls [runuser]`},
		{`runuser -l bob -c 'tmux ls'`, `runuser -l bob -c tmux ls; tmux ls [runuser]`},
		{`sg wheel 'tmux ls'`, `sg wheel tmux ls; tmux ls [sg]`},
		{`sg wheel -c 'tmux ls'`, `sg wheel -c tmux ls; tmux ls [sg]`},
		{`capsh --caps=x -- -c 'tmux ls'`, `capsh --caps=x -- -c tmux ls; tmux ls [capsh]`},
		{`capsh --print`, `capsh --print`},
		{`pkexec --user bob tmux ls`, `pkexec --user bob tmux ls; tmux ls [pkexec]`},
		{`setpriv --reuid=1 tmux ls`, `setpriv --reuid=1 tmux ls; tmux ls [setpriv]`},
		{`setpriv -d`, `setpriv -d`},
	})
}
