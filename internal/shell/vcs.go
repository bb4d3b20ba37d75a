package shell

import (
	"slices"
	"strings"
)

// Version control: git's options, keys and subcommands that run shell
// text.
var vcsRunners = map[string]runner{
	"git": runGit,
}

// runGit: git's options and subcommands that run shell text: -c with a
// command-valued key, config of such a key, rebase --exec, bisect run,
// submodule foreach, filter-branch's filters, difftool --extcmd.
func runGit(w *wrapCall) wrapped {
	out := wrapped{}
	args := w.args
	i := 0
	for i < len(args) {
		s, ok := args[i].Text()
		if !ok {
			return out
		}
		if !strings.HasPrefix(s, "-") {
			break
		}
		switch s {
		case "-C", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--config-env":
			i++
		case "-c":
			if i+1 < len(args) {
				i++
				out.texts = append(out.texts, gitConfigText(args[i])...)
			}
		}
		i++
	}
	if i >= len(args) {
		return out
	}
	sub, _ := args[i].Text()
	out.texts = append(out.texts, gitSubTexts(sub, args[i+1:], &out)...)
	return out
}

// gitSubTexts is the shell text a git subcommand runs (bisect run's
// command goes to out.argv).
func gitSubTexts(sub string, rest []Arg, out *wrapped) []runText {
	var texts []runText
	switch sub {
	case "config":
		var kv []Arg
		for _, a := range rest {
			if s, ok := a.Text(); ok && strings.HasPrefix(s, "-") {
				continue
			}
			kv = append(kv, a)
		}
		if len(kv) >= 2 {
			texts = append(texts, gitConfigText(Concat(kv[0], Lit("="), kv[1]))...)
		}
	case "rebase":
		for j := 0; j < len(rest); j++ {
			s, _ := rest[j].Text()
			switch {
			case (s == "-x" || s == "--exec") && j+1 < len(rest):
				texts = append(texts, runText{text: rest[j+1]})
				j++
			case strings.HasPrefix(s, "--exec="):
				texts = append(texts, runText{text: Lit(s[len("--exec="):])})
			}
		}
	case "bisect":
		if len(rest) > 1 {
			if s, _ := rest[0].Text(); s == "run" {
				out.argv = rest[1:]
			}
		}
	case "submodule":
		for j := 0; j < len(rest); j++ {
			if s, _ := rest[j].Text(); s == "foreach" {
				if tail := getopt(rest[j+1:], "", nil, nil); len(tail) > 0 {
					texts = append(texts, runText{text: Join(tail, " ")})
				}
				break
			}
		}
	case "filter-branch", "difftool", "mergetool":
		for j := 0; j+1 < len(rest); j++ {
			s, _ := rest[j].Text()
			if sub == "filter-branch" && strings.HasSuffix(s, "-filter") || sub != "filter-branch" && (s == "-x" || s == "--extcmd") {
				texts = append(texts, runText{text: rest[j+1]})
				j++
			}
		}
	}
	return texts
}

// gitConfigText is the shell text a git configuration key=value runs.
func gitConfigText(kv Arg) []runText {
	if len(kv.pieces) == 0 || kv.pieces[0].hole != nil {
		// A key st cannot read: it may be any command-valued key.
		return []runText{{text: kv}}
	}
	key, _, ok := strings.Cut(kv.pieces[0].lit, "=")
	if !ok {
		return nil
	}
	val, _ := kv.CutPrefix(key + "=")
	key = strings.ToLower(key)
	bang := func() []runText {
		if t, ok := val.CutPrefix("!"); ok {
			return []runText{{text: t}}
		}
		if !val.IsKnown() {
			return []runText{{text: val}}
		}
		return nil
	}
	switch {
	case strings.HasPrefix(key, "alias."), key == "credential.helper", strings.HasPrefix(key, "credential.") && strings.HasSuffix(key, ".helper"):
		return bang()
	case slices.Contains([]string{"core.pager", "core.editor", "core.sshcommand", "core.askpass", "core.fsmonitor",
		"core.gitproxy", "sequence.editor", "diff.external", "gpg.program", "interactive.difffilter",
		"uploadpack.packobjectshook", "web.browser", "core.hookspath"}, key),
		strings.HasPrefix(key, "pager."),
		strings.HasSuffix(key, ".cmd"), strings.HasSuffix(key, ".command"), strings.HasSuffix(key, ".textconv"),
		strings.HasSuffix(key, ".driver"), strings.HasSuffix(key, ".clean"), strings.HasSuffix(key, ".smudge"),
		strings.HasSuffix(key, ".process"), strings.HasSuffix(key, ".program"):
		return []runText{{text: val}}
	}
	return nil
}
