package shell

import "testing"

// TestKnows: the programs the reader knows (its writers, pure readers,
// builtins, runners (make among them), awk and sed) and those it does
// not; go only for the subcommands that write none of their arguments,
// without -o. And every reader of the table writes nothing by its
// arguments, as Writes reads it: a program with an output option does
// not belong there.
func TestKnows(t *testing.T) {
	for name, want := range map[string]bool{
		"cat": true, "grep": true, "ls": true, "cp": true, "rm": true, "git": true, "tar": true, "sed": true,
		"awk": true, "cd": true, "sudo": true, "xargs": true, "bash": true, "curl": true,
		"sqlite3": false, "ex": false, "vim": false, "split": false, "cmake": false, "zip": false, "python3": false,
		"make": true, "uniq": false, "tree": false, "xxd": false,
	} {
		if got := Knows(name); got != want {
			t.Errorf("Knows(%q) = %v, want %v", name, got, want)
		}
	}
	for cmd, want := range map[string]bool{
		"go test ./...": true, "go vet ./x/...": true, "go build ./cmd/st": true, "go build -o bin/st ./cmd/st": false,
		"go test -coverprofile=c.out ./...": false, "go generate ./...": false, "go mod tidy": false,
	} {
		s := Read(cmd, Env{Cwd: "/repo"})
		if len(s.Cmds) != 1 {
			t.Fatalf("%q read as %d commands", cmd, len(s.Cmds))
		}
		if got := KnowsCmd(s.Cmds[0]); got != want {
			t.Errorf("KnowsCmd(%q) = %v, want %v", cmd, got, want)
		}
	}
	for _, name := range readers {
		s := Read(name+" -x a/b c", Env{Cwd: "/repo"})
		if w := Writes(s.Cmds); len(w) != 0 {
			t.Errorf("%s is listed as a reader, yet writes %q", name, w[0].Path.String())
		}
	}
}
