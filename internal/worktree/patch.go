package worktree

import "strings"

// PatchPaths lists the files a Codex apply_patch input changes: the paths
// of its "*** Add File:", "*** Update File:", "*** Delete File:" and
// "*** Move to:" lines, in order, each once. It reads the lines wherever
// they are, so the patch may come bare (the edit tool's input) or inside a
// shell command (apply_patch <<'EOF' ... EOF). Paths are as written:
// relative to the agent's cwd, or absolute; pass them through Rel.
func PatchPaths(patch string) []string {
	var out []string
	seen := map[string]bool{}
	for _, line := range strings.Split(patch, "\n") {
		line = strings.TrimRight(line, "\r")
		// Codex trims the marker lines it reads, so indented markers
		// count. A context line that happens to read like a marker would
		// add a path that is not changed: the scope then refuses more,
		// never less.
		t := strings.TrimLeft(line, " \t")
		for _, m := range []string{"*** Add File:", "*** Update File:", "*** Delete File:", "*** Move to:"} {
			if rest, ok := strings.CutPrefix(t, m); ok {
				p := strings.TrimSpace(rest)
				if p != "" && !seen[p] {
					seen[p] = true
					out = append(out, p)
				}
				break
			}
		}
	}
	return out
}
