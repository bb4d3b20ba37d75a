package cli

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImports: the command line asks the daemon and runs no tmux. Neither
// it, nor its client, nor the guard that runs in the agents' hook process
// may link internal/tmux (the one package that runs tmux), creack/pty or
// the daemon, not even through another package: $TMUX is read with
// internal/tmuxenv, and st daemon runs the daemon through Env.Daemon,
// which cmd/st sets.
//
// And the st binary (cmd/st) links none of what only the control plane's
// server needs: SQLite, Prometheus's client and, through it, protobuf.
// Their package initialisation runs in every st process, each agent hook
// among them, and took about 1 ms of a 2.7 ms `st version`; they are
// st-control-plane's (internal/controlplane/cpserver).
func TestImports(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("this test lists imports with the go command, which is not on PATH: %v", err)
	}
	const mod = "github.com/sophonz/st/"
	runsNoTmux := []string{mod + "internal/tmux", "github.com/creack/pty", mod + "internal/daemon"}
	serverOnly := []string{mod + "internal/controlplane", mod + "internal/controlplane/cpserver", "modernc.org/sqlite", "modernc.org/libc",
		"github.com/prometheus/client_golang/prometheus", "google.golang.org/protobuf/proto"}
	for pkg, forbidden := range map[string][]string{
		"internal/cli": runsNoTmux, "internal/client": runsNoTmux, "internal/guard": runsNoTmux,
		"cmd/st": serverOnly,
	} {
		out, err := exec.Command(goBin, "list", "-deps", "-f", `{{.ImportPath}} {{join .Imports " "}}`, mod+pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", mod+pkg, err, out)
		}
		imports := map[string][]string{}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			f := strings.Fields(line)
			imports[f[0]] = f[1:]
		}
		for _, bad := range forbidden {
			if chain := importChain(imports, mod+pkg, bad); chain != nil {
				t.Errorf("%s links %s: %s", pkg, bad, strings.Join(chain, " -> "))
			}
		}
	}
}

// importChain is a chain of imports from pkg to target, or nil.
func importChain(imports map[string][]string, pkg, target string) []string {
	from := map[string]string{pkg: ""}
	queue := []string{pkg}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p == target {
			var chain []string
			for ; p != ""; p = from[p] {
				chain = append([]string{p}, chain...)
			}
			return chain
		}
		for _, q := range imports[p] {
			if _, seen := from[q]; !seen {
				from[q] = p
				queue = append(queue, q)
			}
		}
	}
	return nil
}
