package agent

// TrustWorktree marks a worktree that st made trusted in the agent's own
// file, when the repository it comes from is trusted there: a worktree is
// a new folder to the agent, which would otherwise stop at its trust
// screen. It returns a note for the person ("" when nothing was done, or
// when the kind has no folder trust).
func TrustWorktree(kind, repoRoot, dir string) string {
	k, err := Lookup(kind)
	if err != nil || k.Launch.TrustFolder == nil {
		return ""
	}
	return k.Launch.TrustFolder(repoRoot, dir)
}
