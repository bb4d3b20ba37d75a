package shell

import (
	"slices"
	"strings"
)

// What the reader knows a program writes by its arguments. Writes lists
// the files of the programs it knows to write (writes.go, copies.go, the
// code of interpreters); the readers below write none by their arguments
// (only to standard output); the shell's builtins and the programs that
// run another (sudo, env, xargs, bash -c) are read through. A program
// outside all of these is one st cannot read: --owns refuses it a path
// outside the worker's scope (internal/worktree), since it may write
// there.

// readers write nothing by their arguments: they read files and print.
// Only pure readers belong here: a program with an option that names a
// file it writes (tree -o, uniq IN OUT, xxd IN OUT, file -C) does not.
var readers = []string{
	"cat", "tac", "head", "tail", "less", "more", "most", "bat", "batcat", "nl", "od", "hexdump", "strings",
	"grep", "egrep", "fgrep", "zgrep", "rg", "ag", "ack", "ls", "dir", "vdir", "exa", "eza", "wc", "diff", "diff3", "cmp", "comm", "colordiff",
	"stat", "realpath", "readlink", "dirname", "basename", "pwd", "du", "df", "which", "whereis", "type",
	"md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum", "b2sum", "cksum", "sum",
	"cut", "paste", "tr", "column", "fold", "fmt", "expand", "unexpand", "rev", "jq", "join",
	"sleep", "seq", "expr", "bc", "dc", "date", "cal", "nproc", "uname", "whoami", "id", "groups", "hostname",
	"ps", "pgrep", "pidof", "lsof", "free", "uptime", "printenv", "tty", "locale", "getent", "yes", "numfmt", "factor",
}

// writers are the programs programWrites and copyLike judge by their
// arguments (besides the tables operandWriters and outputOptions).
var writers = []string{"cp", "mv", "install", "ln", "chmod", "chown", "chgrp", "dd", "find", "git", "rsync",
	"tar", "gtar", "bsdtar", "unzip", "patch", "apply_patch", "applypatch"}

// KnowsCmd is Knows for one command: besides the programs Knows knows, go
// given a subcommand that writes none of its arguments (go test ./...,
// go vet, go list) and no -o.
func KnowsCmd(c *Cmd) bool {
	name := c.Name()
	if Knows(name) {
		return true
	}
	if name != "go" || len(c.Args) < 2 {
		return false
	}
	switch sub, _ := c.Args[1].Text(); sub {
	case "test", "vet", "list", "doc", "version", "env", "build", "run", "help":
		return !slices.ContainsFunc(c.Args[2:], func(a Arg) bool {
			s := a.String()
			return s == "-o" || strings.HasPrefix(s, "-o=") || strings.HasSuffix(strings.SplitN(s, "=", 2)[0], "profile") || s == "-w"
		})
	}
	return false
}

// Knows reports whether the reader knows what the program writes by its
// arguments: a writer it judges, a reader that writes nothing, a builtin
// of the shell, a program that runs another (read through), awk or sed
// (their code is read for what it writes: print > f, w f).
func Knows(name string) bool {
	if _, ok := operandWriters[name]; ok {
		return true
	}
	if _, ok := outputOptions[name]; ok {
		return true
	}
	if _, ok := builtins[name]; ok {
		return true
	}
	if lang := Interpreter(name); lang == "awk" || lang == "sed" {
		return true
	}
	return slices.Contains(writers, name) || slices.Contains(readers, name) || IsRunner(name) || slices.Contains(Shells, name)
}
