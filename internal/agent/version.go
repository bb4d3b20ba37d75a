package agent

// Which versions of Claude Code and Codex st knows. The agents ship new
// versions every few days, and st reads their screens and hooks, so st
// says plainly when it meets a version it was not tested on. The ranges
// come from the compatibility tier (scripts/compat), which runs the real
// clients of each version through st's scenarios; docs/compatibility.md
// has its table.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/mod/semver"
)

// Range is the versions of an agent that st was tested on, both ends in.
type Range struct {
	Oldest, Newest string
	// Package is the agent's npm package, for the "Try:" of a note.
	Package string
}

// TestedRange is, per agent kind, the versions on which every scenario of
// scripts/compat passed (docs/compatibility.md's table), from each
// kind's description (Launch.Tested). sim is st's own and has no range.
func TestedRange() map[string]Range {
	out := map[string]Range{}
	for _, k := range All() {
		if k.Launch.Tested.Newest != "" {
			out[k.Name] = k.Launch.Tested
		}
	}
	return out
}

// codexHooksSince is the oldest Codex known to work with st: st learns
// what a worker does from its hooks, which Codex 0.120.0 has only "under
// development" and off (codex_hooks), and 0.130.0 has on (hooks, stable).
// scripts/compat ran every scenario on 0.130.0 (docs/compatibility.md).
const codexHooksSince = "0.130.0"

// Support is how far st knows an agent's version.
type Support int

const (
	// Tested: within TestedRange.
	Tested Support = iota
	// Newer than TestedRange: st goes on, with a warning.
	Newer
	// Older than TestedRange, lacking nothing st knows it needs: st goes
	// on, with a warning.
	Older
	// TooOld lacks something st needs: st refuses to start it.
	TooOld
	// Unknown: the version could not be read; st goes on, with a warning.
	Unknown
	// Missing: the program is not there; st refuses to start it.
	Missing
)

var supportNames = [...]string{"tested", "newer", "older", "too-old", "unknown", "missing"}

func (s Support) String() string {
	if int(s) < len(supportNames) {
		return supportNames[s]
	}
	return "support(" + strconv.Itoa(int(s)) + ")"
}

// MarshalText writes the name, for st doctor's --json.
func (s Support) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Verdict is what st makes of the agent program a start would run.
type Verdict struct {
	Kind    string  `json:"kind"`
	Program string  `json:"program"`           // the path that was run
	Version string  `json:"version,omitempty"` // e.g. "2.1.300"
	Support Support `json:"support"`
	Tested  Range   `json:"tested"`
	// Note is the plain word for the person ("" for a tested version):
	// a warning for Newer, Older and Unknown, the reason for TooOld and
	// Missing.
	Note string `json:"note,omitempty"`
	// Hint is what to do ("Try: ..."), for a note.
	Hint string `json:"hint,omitempty"`
	// Workarounds are what st does differently for this version.
	Workarounds []string `json:"workarounds,omitempty"`
}

// Line is the note as one line for the person ("" when there is none):
// the note, then what to do.
func (v Verdict) Line() string {
	if v.Note == "" {
		return ""
	}
	if v.Hint == "" {
		return v.Note
	}
	return v.Note + ". Try: " + v.Hint
}

// Refused reports whether st must not start this program.
func (v Verdict) Refused() bool { return v.Support == TooOld || v.Support == Missing }

// Program is what running an agent's program once told st.
type Program struct {
	Path    string // absolute
	Output  string // the first line --version printed
	Version string // the version in it ("" when there is none)
	// NoDaemon: Codex takes --no-daemon (it has a background server to
	// keep out of; versions before 0.160 have neither).
	NoDaemon bool
	// NoHooks: Codex's `features list` has no "hooks" feature (before
	// 0.130), so it runs no hooks at all.
	NoHooks bool
	Err     error // it could not be run
}

// probeTimeout bounds one run of `<agent> --version` (and Codex's others):
// a launcher that hangs must not hold up a start for long. opencode's
// --version (a 185 MB native binary to page in) took 7 s at a load of 18
// on 2 cores, and over 10 s beside a running opencode worker.
const probeTimeout = 30 * time.Second

// probes caches each program's answers by path, size and modification
// time, so an upgrade in place is noticed and nothing is run twice.
var probes = struct {
	sync.Mutex
	m map[string]Program
}{m: map[string]Program{}}

// LookProgram finds the program an agent kind starts with: prog when it
// is a path, else the first one of that name (default: the kind) in the
// folders of pathEnv (the PATH the worker's window gets; "" for st's own).
func LookProgram(kind, prog, pathEnv string) (string, error) {
	if prog == "" {
		prog = kind
	}
	if strings.Contains(prog, "/") {
		a, err := filepath.Abs(prog)
		if err != nil {
			return "", err
		}
		if !isExecutable(a) {
			return "", fmt.Errorf("%s is not an executable file", a)
		}
		return a, nil
	}
	if pathEnv == "" {
		pathEnv = os.Getenv("PATH")
	}
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" {
			continue // the current folder: not a place st trusts to find an agent
		}
		if c := filepath.Join(dir, prog); isExecutable(c) {
			return filepath.Abs(c)
		}
	}
	return "", fmt.Errorf("%s is not on the PATH (%s)", prog, pathEnv)
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// ProbeProgram runs `path --version` (and for Codex `path --help` and
// `path features list`) once per version of the file at path, and says
// what they told.
func ProbeProgram(ctx context.Context, kind, path string) Program {
	fi, err := os.Stat(path)
	if err != nil {
		return Program{Path: path, Err: err}
	}
	key := fmt.Sprintf("%s\x00%s\x00%d\x00%d", kind, path, fi.Size(), fi.ModTime().UnixNano())
	probes.Lock()
	p, ok := probes.m[key]
	probes.Unlock()
	if ok {
		return p
	}
	p = probe(ctx, kind, path)
	if p.Err == nil || !errors.Is(p.Err, context.Canceled) {
		probes.Lock()
		probes.m[key] = p
		probes.Unlock()
	}
	return p
}

// versionRE finds a version in --version's output: "2.1.300 (Claude
// Code)", "codex-cli 0.171.0".
var versionRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\b(\d+)\.(\d+)\.(\d+)(-[0-9A-Za-z.-]+)?\b`) })

func probe(ctx context.Context, kind, path string) Program {
	p := Program{Path: path}
	// Codex's launcher takes about a second a run on a busy machine: its
	// three questions go at once.
	var help, list string
	var helpErr, listErr error
	var wg sync.WaitGroup
	if kind == "codex" {
		wg.Add(2)
		go func() { defer wg.Done(); help, helpErr = run(ctx, nil, path, "--help") }()
		go func() { defer wg.Done(); list, listErr = run(ctx, nil, path, "features", "list") }()
	}
	var env []string
	if k, _ := Lookup(kind); k != nil {
		env = k.Launch.ProbeEnv
	}
	out, err := run(ctx, env, path, "--version")
	wg.Wait()
	if err != nil {
		p.Err = err
		return p
	}
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); l == "" || strings.HasPrefix(l, "WARNING:") {
			continue // Codex warns about its PATH aliases under /tmp first
		}
		if p.Output == "" {
			p.Output = l
		}
		if m := versionRE().FindString(l); m != "" {
			p.Output, p.Version = l, m
			break
		}
	}
	if kind == "codex" {
		// A help or a list that cannot be read says nothing against
		// the program.
		p.NoDaemon = helpErr != nil || strings.Contains(help, "--no-daemon")
		if listErr == nil && strings.TrimSpace(list) != "" {
			p.NoHooks = true
			for _, l := range strings.Split(list, "\n") {
				if f := strings.Fields(l); len(f) > 0 && f[0] == "hooks" {
					p.NoHooks = false
				}
			}
		}
	}
	return p
}

// run runs a program briefly with no input, for its output.
func run(ctx context.Context, env []string, path string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdin = nil
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	if ctx.Err() != nil {
		return "", fmt.Errorf("%s %s did not answer in %s", path, strings.Join(args, " "), probeTimeout)
	}
	if err != nil {
		msg := err.Error()
		var ee *exec.ExitError
		if errors.As(err, &ee) && len(ee.Stderr) > 0 {
			msg += ": " + lastLine(string(ee.Stderr))
		}
		return "", fmt.Errorf("%s %s: %s", path, strings.Join(args, " "), msg)
	}
	return string(out), nil
}

func lastLine(s string) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(ls[len(ls)-1])
}

// Check says whether st can start the kind's agent from prog (ST_<KIND>_BIN,
// or "" for the kind's name) found on pathEnv (the PATH the worker's window
// gets, "" for st's own), and what to tell the person. `st worker start`
// puts the note into the start's notes and refuses when Refused is true;
// `st doctor` shows the same verdict. It runs the program at most once per
// version of its file.
func Check(ctx context.Context, kind, prog, pathEnv string) Verdict {
	rng, known := TestedRange()[kind]
	v := Verdict{Kind: kind, Tested: rng}
	if !known {
		return v // sim: st itself
	}
	path, err := LookProgram(kind, prog, pathEnv)
	if err != nil {
		v.Program, v.Support = prog, Missing
		if v.Program == "" {
			v.Program = kind
		}
		v.Note = fmt.Sprintf("cannot start %s: %v", kind, err)
		v.Hint = fmt.Sprintf("install it (npm install -g %s@%s) or set ST_%s_BIN to its path", rng.Package, rng.Newest, strings.ToUpper(kind))
		return v
	}
	p := ProbeProgram(ctx, kind, path)
	return judge(kind, p)
}

// CheckAgents is Check for every agent st has a tested range for, with the
// programs and PATH that getenv gives (ST_CLAUDE_BIN, ST_CODEX_BIN, PATH):
// what `st doctor` shows. An agent that is not installed comes back
// Missing.
func CheckAgents(ctx context.Context, getenv func(string) string) []Verdict {
	var out []Verdict
	for _, kind := range Kinds() {
		if _, ok := TestedRange()[kind]; ok {
			out = append(out, Check(ctx, kind, getenv("ST_"+strings.ToUpper(kind)+"_BIN"), getenv("PATH")))
		}
	}
	return out
}

// judge makes the verdict on a program's version.
func judge(kind string, p Program) Verdict {
	rng := TestedRange()[kind]
	v := Verdict{Kind: kind, Program: p.Path, Version: p.Version, Tested: rng}
	tested := fmt.Sprintf("%s to %s", rng.Oldest, rng.Newest)
	install := fmt.Sprintf("npm install -g %s@%s", rng.Package, rng.Newest)
	if kind == "codex" && p.Version != "" && !p.NoDaemon {
		v.Workarounds = append(v.Workarounds, "it has no --no-daemon, so st starts it without (it runs in its window, with no background server)")
	}
	if p.Version == "" {
		v.Support = Unknown
		why := "it printed " + strconvQuote(p.Output)
		if p.Err != nil {
			why = p.Err.Error()
		}
		v.Note = fmt.Sprintf("could not tell which version of %s %s is (%s); st was tested on %s %s, and goes on", kind, p.Path, why, kind, tested)
		v.Hint = "check that " + p.Path + " --version works"
		return v
	}
	if kind == "codex" && p.NoHooks {
		v.Support = TooOld
		v.Note = fmt.Sprintf("codex %s is too old for st: it has no hooks (codex features list shows no \"hooks\"), and st learns what a worker does from them; the oldest version that works is %s",
			p.Version, codexHooksSince)
		v.Hint = install
		return v
	}
	switch {
	case compareVersions(p.Version, rng.Newest) > 0:
		v.Support = Newer
		v.Note = fmt.Sprintf("%s %s is newer than st was tested on (%s): it may draw its screens or send its hooks differently; if the worker's state looks wrong, tell st's maintainers", kind, p.Version, tested)
		v.Hint = fmt.Sprintf("npm install -g %s@%s, the newest version st was tested on", rng.Package, rng.Newest)
	case compareVersions(p.Version, rng.Oldest) < 0:
		v.Support = Older
		v.Note = fmt.Sprintf("%s %s is older than st was tested on (%s): it may lack hooks or screens st relies on", kind, p.Version, tested)
		v.Hint = install
	default:
		v.Support = Tested
	}
	return v
}

func strconvQuote(s string) string {
	if s == "" {
		return "nothing"
	}
	return strconv.Quote(s)
}

// compareVersions compares two versions as -1, 0 or +1, in semantic
// versioning's order (golang.org/x/mod/semver): by their three numbers,
// then a pre-release ("1.2.0-beta") before its release, and pre-releases
// by their dot-separated parts, numbers as numbers ("beta.9" before
// "beta.10"). Text without a version sorts first.
func compareVersions(a, b string) int {
	return semver.Compare(semverOf(a), semverOf(b))
}

// semverOf is the version found in s as semver reads it ("v2.1.300",
// "v1.2.0-beta.9"), or "" (which sorts before every version) for none.
// Build metadata (+...) is not part of a version st reads.
func semverOf(s string) string {
	m := versionRE().FindString(s)
	if m == "" {
		return ""
	}
	return semver.Canonical("v" + m)
}
