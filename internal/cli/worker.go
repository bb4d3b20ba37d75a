package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

// st worker and its commands, one file each (issue 36 item 5), its test
// beside it where it has one of its own: worker_start.go, worker_wait.go,
// worker_read.go, worker_done.go, worker_send.go, worker_stop.go,
// worker_list.go, worker_rename.go, worker_adopt.go (release, adopt,
// offer: the moves of a worker between coordinators), worker_merge.go
// (diff, merge, pick). The account's commands are controlplane*.go,
// login.go and machines.go.

// Exit statuses of st worker wait.
const (
	exitAttention = 2 // some worker waits for a person, is idle, failed or gone
	exitTimeout   = 3 // the timeout passed first
)

func newWorkerCmd(env *Env) *cobra.Command {
	cmd := &cobra.Command{Use: "worker", Short: "Workers: agents in windows of their own"}
	cmd.AddCommand(newWorkerStartCmd(env, nil), newWorkerWaitCmd(env, nil), newWorkerReadCmd(env, nil), newWorkerDoneCmd(env, nil),
		newWorkerSendCmd(env, nil), newWorkerStopCmd(env, nil), newWorkerListCmd(env, nil), newWorkerRenameCmd(env, nil),
		newWorkerReleaseCmd(env, nil), newWorkerAdoptCmd(env, nil), newWorkerOfferCmd(env, nil),
		newWorkerDiffCmd(env, nil), newWorkerMergeCmd(env, "merge", nil), newWorkerMergeCmd(env, "pick", nil))
	return cmd
}

// callerPane is the pane the command runs in, or "" outside tmux (the
// daemon then acts for no pane, or refuses).
func callerPane(env *Env) string { return env.Getenv("TMUX_PANE") }

func exactArgs(n int, usage string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageError(fmt.Sprintf("%s takes %d argument(s), got %d", cmd.CommandPath(), n, len(args)), usage)
		}
		return nil
	}
}
