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
package shell
