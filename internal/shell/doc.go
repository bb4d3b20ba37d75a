// Package shell reads a shell command line once, with mvdan.cc/sh (its
// syntax package parses, its expand package expands what can be known),
// and hands its readers the same facts: every command that may run, with
// its arguments, redirections, folder, standard input and environment;
// the wrappers it was found inside, unwrapped by one table (sudo, env,
// nohup, setsid, timeout, xargs, busybox, fakeroot, time, find -exec,
// sh -c, eval, source, ssh, ...); and holes where a word cannot be known
// (a variable of the environment, a command substitution, positional
// parameters, a changed IFS), each saying where it comes from.
//
// The guard (internal/guard) reads these facts to refuse commands that may
// stop the agent's tmux server; the ownership scopes (internal/worktree)
// read the files they write (Writes: redirections, the programs that write
// by their arguments, rsync, tar, unzip and patch, and interpreters'
// inline code, which InlineCode finds for both).
//
// Reading is bounded: the text's structure is measured before mvdan parses
// it (its parser recurses once per nesting level), expanded words and the
// total work are bounded, and a reader past a bound stops with a
// LimitError. What it has not read may do anything: its callers refuse.
//
// The engine is apart from what it knows of programs. The engine: read.go
// (the API), walk.go (the walk of the parse), expand.go and value.go (words
// and holes), state.go (variables, functions, folder), builtins.go (the
// shell's builtins), budget.go (the bounds), runners.go (how a program
// that runs another is read through). What it knows of other programs is
// in files by family, each with its table (a literal) and its own
// table-driven test: users.go (sudo, su, doas, pkexec...), process.go
// (env, nohup, timeout, nice, unshare, chroot...), shells.go (sh -c, exec,
// busybox, screen...), filetools.go (find -exec, xargs, fd, parallel,
// entr...), debuggers.go (gdb, strace...), vcs.go (git: what it runs and
// what it writes), buildtools.go (make, npx, hyperfine), later.go (ssh,
// at, crontab); writes.go and copies.go hold what the writers write (tee,
// rm, tar, unzip, patch, cp, rsync...), code.go the interpreters' code.
package shell
