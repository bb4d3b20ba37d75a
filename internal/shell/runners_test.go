package shell

import "testing"

// readCase is a command line and what Read finds in it (show's form: each
// command's words, holes in <>, and what ran it in []).
type readCase struct{ src, want string }

// readsAs checks each case's reading: the families' tests are tables of
// these.
func readsAs(t *testing.T, cases []readCase) {
	t.Helper()
	for _, c := range cases {
		if got := show(c.src); got != c.want {
			t.Errorf("Read(%q)\n got: %s\nwant: %s", c.src, got, c.want)
		}
	}
}

// TestRunnerFamilies: each program is in one family's table, and the
// shells of Shells are each run as a shell.
func TestRunnerFamilies(t *testing.T) {
	t.Parallel()
	in := map[string]int{}
	for _, fam := range runnerFamilies {
		for name := range fam {
			in[name]++
		}
	}
	for name, n := range in {
		if n > 1 {
			t.Errorf("%s is in %d families' tables: one knows it", name, n)
		}
	}
	for _, sh := range Shells {
		if _, ok := shellRunners[sh]; !ok {
			t.Errorf("the shell %s is not in shellRunners", sh)
		}
	}
	if !IsRunner("sudo") || !IsRunner("eval") || IsRunner("cat") {
		t.Error("IsRunner: sudo and eval run commands, cat does not")
	}
}
