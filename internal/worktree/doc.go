// Package worktree is st's git side and its ownership scopes.
//
// Git: a worker started with --worktree gets a git worktree and a branch of
// its own (Repo.Add), made from the coordinator's current commit, so that its
// files, builds and tests never mix with anyone else's. Its changes are read
// against that commit (Worktree.Changes, Worktree.Diff) without touching the
// worker's index, committed when it is done (Worktree.CommitAll), merged into
// the coordinator's checkout (Repo.Merge) only when that cannot lose or mix
// anyone's uncommitted work, and removed with its branch (Repo.Remove).
// Everything runs the git program, so the result is what the user's own git
// would do; a failed command keeps git's words in a *GitError.
//
// Scopes: --owns GLOB says what a worker may change, as globs relative to the
// repository root ("src/**", "docs/*.md", "**/*_test.go"). Scope.Allows
// judges one path, Overlap tells whether two workers could both change the
// same file, and Outside lists changes a scope does not allow. The agents'
// hooks see paths in three shapes: file paths of edit tools (Rel), the
// files a shell command writes (ShellOutside, from the facts internal/shell
// reads) and the files of a Codex patch (shell.PatchPaths). Each is judged
// where it lands: symbolic links are followed, and git commands that
// change the whole work tree (reset, stash, checkout BRANCH, clean...) are
// judged against the whole repository. A program the reader does not know
// (shell.Knows) may write any path it is given: one given a path outside
// the scope is refused.
//
// Scopes are a guard rail for cooperating agents, not a sandbox: what a
// shell command writes through a variable of the environment or a program
// of its own cannot be read from its text, and is not reported.
package worktree
