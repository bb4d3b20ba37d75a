package cli

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"mvdan.cc/sh/v3/syntax"
)

// The st command lines the README and docs/*.md show, checked against
// st's own command tree: a page that names a command or a flag st does
// not have fails here, with the page and line to fix. Two kinds of line:
//
//   - a line of a shell code block (```sh, ```bash, ```shell, ```console):
//     read with mvdan.cc/sh, and each st command in it parsed as st would
//     parse it: its command path, its flags with their values (a flag's
//     own check of its value too), its arguments' number, its required
//     flags;
//   - a command in backquotes in the text (`st worker read ID`): often
//     usage syntax ([--json], install \| uninstall, ID...) or a fragment
//     (`st worker done --summary`), so only its command path and the
//     names of its flags are checked.

// docCommand is one st command line a page shows.
type docCommand struct {
	where string   // file:line
	words []string // after "st"
	full  bool     // from a shell block: parsed in full
}

// checkDocs checks every st command line of the markdown files and
// returns one message per line that st would not take, and how many
// lines it checked.
func checkDocs(t *testing.T, root string, files []string) (problems []string, checked int) {
	t.Helper()
	for _, f := range files {
		cmds, err := docCommands(root, f)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		for _, c := range cmds {
			checked++
			if err := checkDocCommand(c); err != nil {
				shown := strings.ReplaceAll(strings.Join(c.words, " "), alt, `\|`)
				problems = append(problems, fmt.Sprintf("%s: st %s: %v", c.where, shown, err))
			}
		}
	}
	return problems, checked
}

var (
	fence      = regexp.MustCompile("^\\s*```\\s*([A-Za-z]*)")
	inlineSt   = regexp.MustCompile("`st ([^`]+)`")
	shellFence = map[string]bool{"sh": true, "bash": true, "shell": true, "console": true}
)

// docCommands reads the st command lines of one markdown file, name
// (its path under root, as messages show it).
func docCommands(root, name string) ([]docCommand, error) {
	f, err := os.Open(filepath.Join(root, name))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []docCommand
	inBlock, shellBlock := false, false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20) // table rows run long
	for n := 1; sc.Scan(); n++ {
		line, where := sc.Text(), fmt.Sprintf("%s:%d", name, n)
		if m := fence.FindStringSubmatch(line); m != nil {
			inBlock = !inBlock
			shellBlock = inBlock && shellFence[m[1]]
			continue
		}
		switch {
		case shellBlock:
			cs, err := shellCommands(line, where)
			if err != nil {
				return nil, err
			}
			out = append(out, cs...)
		case !inBlock:
			for _, m := range inlineSt.FindAllStringSubmatch(line, -1) {
				for _, words := range inlineCommands(m[1]) {
					out = append(out, docCommand{where: where, words: words})
				}
			}
		}
	}
	return out, sc.Err()
}

// shellCommands reads one line of a shell block and returns its st
// commands (st ... && st ..., st in $(...) too). A line that is not
// shell fails: a shell block holds what a person may paste.
func shellCommands(line, where string) ([]docCommand, error) {
	trimmed := strings.TrimPrefix(strings.TrimSpace(line), "$ ")
	file, err := syntax.NewParser().Parse(strings.NewReader(trimmed), "")
	if err != nil {
		return nil, fmt.Errorf("%s: a shell block's line that is not shell: %v", where, err)
	}
	var out []docCommand
	syntax.Walk(file, func(node syntax.Node) bool {
		call, ok := node.(*syntax.CallExpr)
		if !ok || len(call.Args) == 0 || call.Args[0].Lit() != "st" {
			return true
		}
		var words []string
		for _, w := range call.Args[1:] {
			words = append(words, wordValue(w))
		}
		out = append(out, docCommand{where: where, words: words, full: true})
		return true
	})
	return out, nil
}

// wordValue is a word's value as the shell would pass it, for words of
// literal text and quotes; a word with an expansion in it stands for an
// argument st is given ("ARG").
func wordValue(w *syntax.Word) string {
	var b strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			b.WriteString(p.Value)
		case *syntax.SglQuoted:
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				lit, ok := q.(*syntax.Lit)
				if !ok {
					return "ARG"
				}
				b.WriteString(lit.Value)
			}
		default:
			return "ARG"
		}
	}
	return b.String()
}

// alt marks "a \| b" in usage syntax: any one of the words around it.
const alt = "\x00|"

// inlineCommands splits one backquoted `st ...` into its commands
// (`st down; st up` is two) and words: usage syntax's brackets and "..."
// go, a shell redirection or pipe ends the command.
func inlineCommands(text string) [][]string {
	text = strings.ReplaceAll(text, `\|`, " "+alt+" ")
	var out [][]string
	for _, part := range regexp.MustCompile(`;|&&`).Split("st "+text, -1) {
		words := splitWords(part)
		if len(words) == 0 || words[0] != "st" {
			continue
		}
		var kept []string
		for _, w := range words[1:] {
			if w == ">" || w == "|" || w == "2>" || w == ">>" {
				break
			}
			w = strings.TrimRight(strings.Trim(w, "[]"), ".")
			w = strings.TrimRight(w, "]")
			if w != "" {
				kept = append(kept, w)
			}
		}
		out = append(out, kept)
	}
	return out
}

// splitWords splits on spaces outside quotes, and drops the quotes.
func splitWords(s string) []string {
	var words []string
	var b strings.Builder
	in, quote, has := false, rune(0), false
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			b.WriteRune(r)
		case r == '"' || r == '\'':
			quote, in, has = r, true, true
		case r == ' ' || r == '\t':
			if in {
				words = append(words, b.String())
				b.Reset()
				in, has = false, false
			}
		default:
			b.WriteRune(r)
			in = true
		}
	}
	if in || has {
		words = append(words, b.String())
	}
	return words
}

// checkDocCommand checks one command against a fresh command tree (a
// parse leaves its flags set).
func checkDocCommand(c docCommand) error {
	env := &Env{Getenv: func(string) string { return "" }}
	cmd, rest, err := docCommandPath(newRoot(env), c.words)
	if err != nil {
		return err
	}
	if cmd.DisableFlagParsing { // st agent sim: its words are the sim's own
		return nil
	}
	if !c.full {
		return checkFlagNames(cmd, rest)
	}
	if err := cmd.ParseFlags(rest); err != nil {
		return err
	}
	if err := cmd.ValidateArgs(cmd.Flags().Args()); err != nil {
		return err
	}
	if err := cmd.ValidateRequiredFlags(); err != nil {
		return err
	}
	return cmd.ValidateFlagGroups()
}

// docCommandPath follows the words to the command they name and returns
// it with the words left. Each of "a \| b" must be a command where one is.
func docCommandPath(root *cobra.Command, words []string) (*cobra.Command, []string, error) {
	cmd, i := root, 0
	for i < len(words) && !strings.HasPrefix(words[i], "-") && len(cmd.Commands()) > 0 {
		alts := []string{words[i]}
		j := i + 1
		for j+1 < len(words) && words[j] == alt {
			alts = append(alts, words[j+1])
			j += 2
		}
		var next *cobra.Command
		for _, a := range alts {
			sub := subcommand(cmd, a)
			if sub == nil {
				if cmd.Runnable() && a == alts[0] { // an argument of cmd
					return cmd, words[i:], nil
				}
				return nil, nil, fmt.Errorf("unknown command %q for %q", a, cmd.CommandPath())
			}
			if next == nil {
				next = sub
			}
		}
		cmd, i = next, j
	}
	if cmd == root {
		return nil, nil, fmt.Errorf("no command named")
	}
	return cmd, words[i:], nil
}

func subcommand(cmd *cobra.Command, name string) *cobra.Command {
	for _, c := range cmd.Commands() {
		if c.Name() == name || c.HasAlias(name) {
			return c
		}
	}
	return nil
}

// checkFlagNames checks that each flag the words name is one of cmd's.
func checkFlagNames(cmd *cobra.Command, words []string) error {
	for _, w := range words {
		if w == alt || !strings.HasPrefix(w, "-") || w == "-" {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(w, "-"), "=")
		found := false
		if strings.HasPrefix(w, "--") {
			found = cmd.Flags().Lookup(name) != nil || cmd.InheritedFlags().Lookup(name) != nil || name == "help"
		} else {
			found = len(name) == 1 && (cmd.Flags().ShorthandLookup(name) != nil || cmd.InheritedFlags().ShorthandLookup(name) != nil || name == "h")
		}
		if !found {
			return fmt.Errorf("unknown flag %s for %q (%s --help lists its flags)", w, cmd.CommandPath(), cmd.CommandPath())
		}
	}
	return nil
}

// docFiles are the README and every page under docs/: the module's
// root, and their paths under it.
func docFiles(t *testing.T) (string, []string) {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no pages under %s/docs: %v", root, err)
	}
	files := []string{"README.md"}
	for _, p := range pages {
		files = append(files, filepath.Join("docs", filepath.Base(p)))
	}
	return root, files
}

// TestDocsCommands: every st command line the README and docs/*.md show
// is one st takes (its commands and flags exist; a shell block's line
// parses in full, values and arguments too).
func TestDocsCommands(t *testing.T) {
	root, files := docFiles(t)
	problems, checked := checkDocs(t, root, files)
	for _, p := range problems {
		t.Error(p)
	}
	t.Logf("checked %d st command lines in %d files", checked, len(files))
	// The README's first-use block alone is six lines; the pages show
	// about a hundred more: a checker that found few read nothing.
	if checked < 100 {
		t.Errorf("checked %d st command lines in %d files, want at least 100", checked, len(files))
	}
}

// TestDocsCommandsFail: the check fails a page whose command or flag st
// does not have, naming the page and line, in a shell block and in the
// text alike, and takes what st takes.
func TestDocsCommandsFail(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "page.md")
	text := "# A page\n\n```sh\nst worker start --agent sim --task t.md --name ok\n" +
		"st worker start --agnet sim --task t.md\nst worker wait --timeout 15m && st worker raed x\n" +
		"st worker read\nst worker wait --timeout forever\n```\n\n" +
		"Run `st orch show [RUN] [--json]`, `st hooks install \\| uninstall \\| status`, `st worker done --summary`;\n" +
		"not `st worker list --everything`, `st plugin install \\| remove`, nor `st frobnicate`.\n"
	if err := os.WriteFile(page, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	problems, checked := checkDocs(t, dir, []string{"page.md"})
	if checked != 12 {
		t.Errorf("checked %d command lines, want 12:\n%s", checked, strings.Join(problems, "\n"))
	}
	want := []string{
		`page.md:5: st worker start --agnet sim --task t.md: unknown flag: --agnet`,
		`page.md:6: st worker raed x: unknown command "raed" for "st worker"`,
		`page.md:7: st worker read: st worker read takes 1 argument(s), got 0`,
		`page.md:8: st worker wait --timeout forever: invalid argument "forever" for "--timeout" flag`,
		`page.md:12: st worker list --everything: unknown flag --everything for "st worker list"`,
		`page.md:12: st plugin install \| remove: unknown command "remove" for "st plugin"`,
		`page.md:12: st frobnicate: unknown command "frobnicate" for "st"`,
	}
	if len(problems) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%s", len(problems), len(want), strings.Join(problems, "\n"))
	}
	for i, w := range want {
		if !strings.HasPrefix(problems[i], w) {
			t.Errorf("problem %d:\n got %q\nwant it to begin %q", i, problems[i], w)
		}
	}
}

// readmeRunners: the test that runs each README line that is not st's own
// (st's own lines run word for word in a testscript script): its first
// word, the file that holds the test, and the test.
var readmeRunners = map[string]struct{ file, holds string }{
	"scripts/demo":         {"cmd/st/demo_test.go", "func TestDemo("},
	"scripts/test":         {".ci/run", "exec scripts/test"},
	"scripts/install":      {"cmd/st/install_test.go", "func TestInstallScript("},
	"tmux":                 {"tests/real/real_test.go", "func TestReadmeAsk("},
	"claude":               {"tests/real/real_test.go", "func TestReadmeAsk("},
	"/sophonz:orchestrate": {"tests/real/real_test.go", "func TestReadmeAsk("},
}

// TestReadmeCommandsRun: every line of the README's shell blocks is run
// by a test. An st line is an exec line, word for word, of a testscript
// script under testdata/script (firstuse.txtar holds the six of first
// use; setup.txtar st setup and st doctor); any other line's first word
// names its test in readmeRunners, which must be there. The README's
// first block is the demo and the tests, and those scripts are there to
// run; the task file it shows is the one firstuse.txtar runs.
func TestReadmeCommandsRun(t *testing.T) {
	root, _ := docFiles(t)
	scripts, err := filepath.Glob(filepath.Join(root, "testdata", "script", "*.txtar"))
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no testscript scripts: %v", err)
	}
	execs := map[string]string{} // "worker read api-tests" -> the script
	for _, s := range scripts {
		data, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			if rest, ok := strings.CutPrefix(line, "exec st "); ok {
				execs[strings.Join(splitWords(rest), " ")] = filepath.Base(s)
			}
		}
	}
	blocks := readmeShellBlocks(t, filepath.Join(root, "README.md"))
	if len(blocks) == 0 || !slices.Equal(blocks[0].lines, []string{"scripts/demo", "scripts/test"}) {
		t.Errorf("the README's first shell block is not the demo and the tests (scripts/demo, scripts/test): %+v", blocks)
	}
	for _, f := range []string{"scripts/demo", "scripts/test"} {
		if fi, err := os.Stat(filepath.Join(root, f)); err != nil || fi.Mode()&0o111 == 0 {
			t.Errorf("%s, which the README runs first, is not an executable file: %v", f, err)
		}
	}
	// The task file the README shows is the one firstuse.txtar runs.
	firstuse, err := os.ReadFile(filepath.Join(root, "testdata", "script", "firstuse.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	_, task, _ := strings.Cut(string(firstuse), "-- api-tests.md --\n")
	task, _, _ = strings.Cut(task, "-- ")
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if task == "" || !strings.Contains(string(readme), "```text\n"+task+"```\n") {
		t.Errorf("the README does not show firstuse.txtar's api-tests.md as it is:\n%s", task)
	}
	ran := 0
	for _, b := range blocks {
		for i, words := range b.words {
			where := fmt.Sprintf("README.md:%d", b.line[i])
			switch r, ok := readmeRunners[words[0]]; {
			case words[0] == "st":
				if execs[strings.Join(words[1:], " ")] == "" {
					t.Errorf("%s: %q is run by no testscript script (exec st ... under testdata/script)", where, b.lines[i])
				}
			case !ok:
				t.Errorf("%s: %q: no test runs it (readmeRunners names none for %q)", where, b.lines[i], words[0])
			default:
				data, err := os.ReadFile(filepath.Join(root, r.file))
				if err != nil || !strings.Contains(string(data), r.holds) {
					t.Errorf("%s: %q is run by %s in %s, which is not there: %v", where, b.lines[i], r.holds, r.file, err)
				}
			}
			ran++
		}
	}
	if ran < 14 {
		t.Errorf("found %d lines in the README's shell blocks, want the 2 + 6 + 6 it shows", ran)
	}
}

// readmeBlock is one shell block of the README: each command line (its
// text without a comment, its words, its line number).
type readmeBlock struct {
	lines []string
	words [][]string
	line  []int
}

func readmeShellBlocks(t *testing.T, path string) []readmeBlock {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []readmeBlock
	var cur *readmeBlock
	inBlock := false
	for n, line := range strings.Split(string(data), "\n") {
		if m := fence.FindStringSubmatch(line); m != nil {
			inBlock = !inBlock
			switch {
			case cur != nil:
				blocks = append(blocks, *cur)
				cur = nil
			case inBlock && shellFence[m[1]]:
				cur = &readmeBlock{}
			}
			continue
		}
		if cur == nil {
			continue
		}
		text := line
		if i := strings.Index(text, " #"); i >= 0 {
			text = text[:i]
		}
		text = strings.TrimSpace(text)
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		cur.lines = append(cur.lines, text)
		cur.words = append(cur.words, splitWords(text))
		cur.line = append(cur.line, n+1)
	}
	return blocks
}

// TestDocsLinks: every link of the README and docs/*.md to a file of the
// repository leads to one that is there (a page another change has not
// written yet is not linked).
func TestDocsLinks(t *testing.T) {
	root, files := docFiles(t)
	link := regexp.MustCompile(`\]\(([^)#\s]+)(#[^)]*)?\)`)
	links := 0
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		for n, line := range strings.Split(string(data), "\n") {
			for _, m := range link.FindAllStringSubmatch(line, -1) {
				if strings.Contains(m[1], "://") || strings.HasPrefix(m[1], "mailto:") {
					continue
				}
				links++
				if _, err := os.Stat(filepath.Join(root, filepath.Dir(f), m[1])); err != nil {
					t.Errorf("%s:%d: a link to %s, which is not there", f, n+1, m[1])
				}
			}
		}
	}
	if links < 10 {
		t.Errorf("found %d links in %d files; the README alone links ten pages", links, len(files))
	}
}
