package shell

import "testing"

// TestProcessRunners: Programs that run a command in another process setting: the command after their options (and their operands: timeout's duration, chroot's root) is read; env -S splits its string as env does; a form that runs no command (ionice -p, flock FD) gives none.
func TestProcessRunners(t *testing.T) {
	t.Parallel()
	readsAs(t, []readCase{
		{`env`, `env`},
		{`env -i A=1 tmux ls`, `env -i A=1 tmux ls; tmux ls [env]`},
		{`env -u HOME tmux ls`, `env -u HOME tmux ls; tmux ls [env]`},
		{`env -S 'tmux ls'`, `env -S tmux ls; tmux ls [env]`},
		{`env -S 'A=1 tmux "l s"'`, `env -S A=1 tmux "l s"; A=1 tmux l s [env]`},
		{`env -C /tmp pwd`, `env -C /tmp pwd; pwd [env]`},
		{`env --chdir=/tmp pwd`, `env --chdir=/tmp pwd; pwd [env]`},
		{`env -0`, `env -0`},
		{`env -- A=1 tmux ls`, `env -- A=1 tmux ls; tmux ls [env]`},
		{`nice -n 5 tmux ls`, `nice -n 5 tmux ls; tmux ls [nice]`},
		{`nice`, `nice`},
		{`ionice -p 1`, `ionice -p 1`},
		{`chrt -p 1`, `chrt -p 1`},
		{`timeout 5 tmux ls`, `timeout 5 tmux ls; tmux ls [timeout]`},
		{`timeout -k 1 5 tmux ls`, `timeout -k 1 5 tmux ls; tmux ls [timeout]`},
		{`watch -n 1 'tmux ls'`, `watch -n 1 tmux ls; tmux ls [watch]`},
		{`watch -x tmux ls`, `watch -x tmux ls; tmux ls [watch]`},
		{`flock /tmp/l -c 'tmux ls'`, `flock /tmp/l -c tmux ls; tmux ls [flock]`},
		{`flock 9`, `flock 9`},
		{`flock -n /tmp/l tmux ls`, `flock -n /tmp/l tmux ls; tmux ls [flock]`},
		{`flock -w 2 /tmp/l tmux ls`, `flock -w 2 /tmp/l tmux ls; tmux ls [flock]`},
		{`unshare -r`, `unshare -r`},
		{`unshare -m tmux ls`, `unshare -m tmux ls; tmux ls [unshare]`},
		{`nsenter -t 1 -m`, `nsenter -t 1 -m`},
		{`nsenter -t 1 -m tmux ls`, `nsenter -t 1 -m tmux ls; tmux ls [nsenter]`},
		{`chroot /srv`, `chroot /srv`},
		{`chroot /srv tmux ls`, `chroot /srv tmux ls; tmux ls [chroot]`},
		{`chroot --userspec=u:g /srv tmux ls`, `chroot --userspec=u:g /srv tmux ls; tmux ls [chroot]`},
		{`systemd-run --user --unit=x tmux ls`, `systemd-run --user --unit=x tmux ls; tmux ls [systemd-run]`},
		{`systemd-run -p X=1 tmux ls`, `systemd-run -p X=1 tmux ls; tmux ls [systemd-run]`},
		{`systemd-run --scope -- tmux ls`, `systemd-run --scope -- tmux ls; tmux ls [systemd-run]`},
		{`ip netns exec ns1 tmux ls`, `ip netns exec ns1 tmux ls; tmux ls [ip]`},
		{`ip addr`, `ip addr`},
		{`ip -n ns1 link`, `ip -n ns1 link`},
	})
}
