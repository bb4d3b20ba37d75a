package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// claudeTimeout bounds one claude command; they take about a second.
const claudeTimeout = 2 * time.Minute

// claudeAttempt bounds one try of it. On a loaded machine claude has
// been seen to print its answer ("✔ Marketplace ... already on disk")
// and then not exit for minutes; every command st runs is idempotent
// (see register), so a try that hangs is ended and made once more.
var claudeAttempt = claudeTimeout / 2 // a var: tests shorten it

// claudeCLI runs the real claude program's plugin commands, which keep
// Claude Code's own records (settings.json, installed_plugins.json) right;
// st never edits those files itself.
type claudeCLI struct {
	bin  string
	home string
	env  []string
}

func newClaudeCLI(c Config) claudeCLI { return claudeCLI{bin: c.ClaudeBin, home: c.Home, env: c.Env} }

// run runs claude with args and returns what it printed: a try that
// hangs past claudeAttempt is ended and tried once more.
func (cl claudeCLI) run(ctx context.Context, args ...string) (string, error) {
	text, hung, err := cl.try(ctx, args)
	if hung {
		text, hung, err = cl.try(ctx, args)
	}
	if err != nil {
		if hung {
			err = fmt.Errorf("gave up after two tries of %s each", claudeAttempt)
		}
		return text, &claudeError{args: args, err: err, out: text}
	}
	return text, nil
}

// try runs claude once; hung says it was ended for taking too long.
func (cl claudeCLI) try(ctx context.Context, args []string) (text string, hung bool, err error) {
	tctx, cancel := context.WithTimeout(ctx, claudeAttempt)
	defer cancel()
	cmd := exec.CommandContext(tctx, cl.bin, args...)
	cmd.Env = cl.env
	// A child of claude's that keeps its output open must not hold the
	// try past its end.
	cmd.WaitDelay = 2 * time.Second
	// In the home folder, so that no project's .claude settings apply.
	if fi, err := os.Stat(cl.home); err == nil && fi.IsDir() {
		cmd.Dir = cl.home
	}
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err != nil && tctx.Err() != nil && ctx.Err() == nil, err
}

// claudeError keeps what claude said when one of its commands failed.
type claudeError struct {
	args []string
	err  error
	out  string
}

func (e *claudeError) Error() string {
	msg := fmt.Sprintf("claude %s: %v", strings.Join(e.args, " "), e.err)
	if e.out != "" {
		msg += ": " + lastLines(e.out, 4)
	}
	return msg
}

func (e *claudeError) Unwrap() error { return e.err }

// notThere tells a failure that only means "already gone".
func (e *claudeError) notThere() bool {
	s := strings.ToLower(e.out)
	return strings.Contains(s, "not found") || strings.Contains(s, "not installed") || strings.Contains(s, "not configured")
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " / ")
}

// listEntry is one plugin of `claude plugin list --json`.
type listEntry struct {
	ID             string `json:"id"`
	Version        string `json:"version"`
	Enabled        bool   `json:"enabled"`
	ReadFromFolder string `json:"readFromFolder"`
	FolderVersion  string `json:"folderVersion"`
}

// listed returns sophonz@sophonz-local as Claude Code lists it, or nil.
func (cl claudeCLI) listed(ctx context.Context) (*listEntry, error) {
	out, err := cl.run(ctx, "plugin", "list", "--json")
	if err != nil {
		return nil, err
	}
	var entries []listEntry
	if err := json.Unmarshal([]byte(jsonPart(out)), &entries); err != nil {
		// A claude without --json: fall back to its text.
		text, err := cl.run(ctx, "plugin", "list")
		if err != nil {
			return nil, err
		}
		if strings.Contains(text, PluginID) {
			return &listEntry{ID: PluginID, Enabled: true}, nil
		}
		return nil, nil
	}
	for i := range entries {
		if entries[i].ID == PluginID {
			return &entries[i], nil
		}
	}
	return nil, nil
}

// jsonPart drops anything claude printed before its JSON.
func jsonPart(s string) string {
	if i := strings.IndexAny(s, "[{"); i > 0 {
		return s[i:]
	}
	return s
}

// register makes Claude Code know the marketplace and the plugin, reading
// both in place from c.ClaudeDir(). Each step is idempotent: adding the
// marketplace again re-points it at this folder, installing again is a
// no-op, and the version Claude recorded is brought up to the folder's.
func (cl claudeCLI) register(ctx context.Context, c Config) (notes []string, err error) {
	if _, err := cl.run(ctx, "plugin", "marketplace", "add", c.ClaudeDir()); err != nil {
		return notes, err
	}
	out, err := cl.run(ctx, "plugin", "install", PluginID)
	if err != nil {
		return notes, err
	}
	already := strings.Contains(strings.ToLower(out), "already installed")
	e, err := cl.listed(ctx)
	if err != nil {
		return notes, err
	}
	if e == nil {
		return notes, fmt.Errorf("claude plugin install %s said %q, but claude plugin list does not show it", PluginID, lastLines(out, 2))
	}
	if !e.Enabled {
		if _, err := cl.run(ctx, "plugin", "enable", PluginID); err != nil {
			return notes, err
		}
		notes = append(notes, "it was disabled in Claude Code; st enabled it again")
	}
	if e.FolderVersion != "" && e.Version != e.FolderVersion {
		if _, err := cl.run(ctx, "plugin", "update", PluginID); err != nil {
			return notes, err
		}
		notes = append(notes, fmt.Sprintf("Claude Code's record of it went from version %s to %s", e.Version, e.FolderVersion))
	}
	if e.ReadFromFolder != "" && !samePath(e.ReadFromFolder, c.PluginDir()) {
		return notes, fmt.Errorf("the plugin %s: Claude Code reads it from %s, not from %s", PluginID, e.ReadFromFolder, c.PluginDir())
	}
	if already {
		notes = append(notes, "it was already registered with Claude Code")
	}
	return notes, nil
}

// unregister undoes register. A plugin or marketplace that is not there
// is no failure.
func (cl claudeCLI) unregister(ctx context.Context, c Config) (removed bool, err error) {
	if _, err := cl.run(ctx, "plugin", "uninstall", PluginID); err == nil {
		removed = true
	} else if ce, ok := err.(*claudeError); !ok || !ce.notThere() {
		return removed, err
	}
	if _, err := cl.run(ctx, "plugin", "marketplace", "remove", MarketplaceName); err == nil {
		removed = true
	} else if ce, ok := err.(*claudeError); !ok || !ce.notThere() {
		return removed, err
	}
	// Claude keeps a copy per version it recorded and does not delete it
	// on uninstall; the folder is named after our marketplace only.
	cache := filepath.Join(c.ClaudeConfigDir, "plugins", "cache", MarketplaceName)
	if _, err := os.Stat(cache); err == nil {
		if err := os.RemoveAll(cache); err != nil {
			return removed, fmt.Errorf("remove Claude's copy of the plugin: %w", err)
		}
	}
	return removed, nil
}

func samePath(a, b string) bool {
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	if err1 == nil && err2 == nil {
		return ra == rb
	}
	return filepath.Clean(a) == filepath.Clean(b)
}
