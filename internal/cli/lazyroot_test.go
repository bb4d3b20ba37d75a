package cli

import (
	"bytes"
	"maps"
	"slices"
	"strings"
	"testing"
)

// TestEachCommandAlone: the tree built for one command (newRootFor) holds
// that command as the whole tree has it, and every command of the whole
// tree can be built alone, so that no command is left out of its own
// process; its help is the same either way.
func TestEachCommandAlone(t *testing.T) {
	env := &Env{Getenv: func(string) string { return "" }}
	whole := newRoot(env)
	var names []string
	for _, c := range whole.Commands() {
		if c.Name() != "help" {
			names = append(names, c.Name())
		}
	}
	byName := slices.Sorted(maps.Keys(commands(env)))
	if !slices.Equal(names, byName) {
		t.Fatalf("the whole tree's commands %q, want those of commands() %q", names, byName)
	}
	help := func(root interface {
		SetArgs([]string)
		Execute() error
	}, out *bytes.Buffer, args ...string) string {
		root.SetArgs(args)
		if err := root.Execute(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return out.String()
	}
	for _, name := range byName {
		alone := newRootFor(env, name)
		if got := alone.Commands(); len(got) != 1 || got[0].Name() != name {
			t.Errorf("newRootFor(%q) holds %d commands", name, len(got))
			continue
		}
		var a, w bytes.Buffer
		alone.SetOut(&a)
		whole := newRoot(env)
		whole.SetOut(&w)
		if ha, hw := help(alone, &a, name, "--help"), help(whole, &w, name, "--help"); ha != hw || !strings.Contains(ha, "Usage:") {
			t.Errorf("st %s --help alone:\n%s\nwith the whole tree:\n%s", name, ha, hw)
		}
	}
	if got := newRootFor(env, "no-such").Commands(); len(got) < len(byName) {
		t.Errorf("a name st does not know got %d commands, want the whole tree", len(got))
	}
}
