package shell

import (
	"path"
	"slices"
	"strconv"
	"strings"
)

// The programs that write where their options say: rsync's destination,
// what tar and unzip extract (into -C or -d), the files a patch names.
// What they write inside an archive or a patch st cannot read is judged
// as a folder (everything under the extraction folder) or as the whole
// tree (a patch from a file).

// rsyncWrites: the destination (the last operand, when it is not another
// host's), the sources with --remove-source-files, and the files and
// folders its options name.
func (c *Cmd) rsyncWrites(args []Arg) []Write {
	ops, opts := parseArgs(args, "eTBfM@", []string{"--rsh", "--rsync-path", "--temp-dir", "--backup-dir", "--log-file",
		"--write-batch", "--only-write-batch", "--read-batch", "--partial-dir", "--exclude", "--include", "--filter",
		"--files-from", "--exclude-from", "--include-from", "--compare-dest", "--copy-dest", "--link-dest", "--chmod",
		"--chown", "--block-size", "--bwlimit", "--max-size", "--min-size", "--timeout", "--contimeout", "--port",
		"--password-file", "--out-format", "--log-file-format", "--suffix", "--usermap", "--groupmap", "--iconv",
		"--info", "--debug", "--remote-option", "--max-delete", "--modify-window", "--address", "--protocol"})
	if _, dry := hasOpt(opts, "-n", "--dry-run", "--list-only"); dry || len(ops) < 2 {
		return nil
	}
	remote := func(a Arg) bool {
		s, _ := a.Text()
		host, _, colon := strings.Cut(s, ":")
		return strings.HasPrefix(s, "rsync://") || colon && !strings.Contains(host, "/")
	}
	var out []Write
	dest, srcs := ops[len(ops)-1], ops[:len(ops)-1]
	if !remote(dest) {
		out = append(out, c.write(dest, "rsync"))
	}
	for _, o := range opts {
		switch o.name {
		case "--remove-source-files":
			for _, s := range srcs {
				if !remote(s) {
					out = append(out, c.write(s, "rsync --remove-source-files"))
				}
			}
		case "--backup-dir", "--partial-dir", "-T", "--temp-dir":
			if !remote(dest) {
				out = append(out, c.write(under(dest, o.val), "rsync "+o.name))
			}
		case "--log-file", "--write-batch", "--only-write-batch":
			out = append(out, c.write(o.val, "rsync "+o.name))
		}
	}
	return out
}

// under is p as seen from folder dir: itself when absolute.
func under(dir, p Arg) Arg {
	if p.HasPrefix("/") {
		return p
	}
	return Concat(dir, Lit("/"), p)
}

func (c *Cmd) write(p Arg, what string) Write {
	return Write{Cmd: c, Path: p, Dir: c.Dir, What: what}
}

// tarWrites: extracting writes under -C's folder (the members named, or
// anything); creating, appending or deleting writes the archive;
// --remove-files removes what it archives.
func (c *Cmd) tarWrites(args []Arg) []Write {
	if len(args) > 0 {
		// The old form: tar xzf FILE, its first word a cluster of letters.
		if s, ok := args[0].Text(); ok && s != "" && !strings.HasPrefix(s, "-") {
			args = append([]Arg{Lit("-" + s)}, args[1:]...)
		}
	}
	ops, opts := parseArgs(args, "fCTXbHLgKNVI", []string{"--file", "--directory", "--files-from", "--exclude-from",
		"--blocking-factor", "--format", "--listed-incremental", "--index-file", "--use-compress-program", "--exclude",
		"--transform", "--owner", "--group", "--mode", "--mtime", "--newer", "--label", "--suffix", "--to-command"})
	dir := Lit(".")
	var archive *Arg
	mode := ""
	var out []Write
	for _, o := range opts {
		switch o.name {
		case "-x", "--extract", "--get":
			mode = "x"
		case "-c", "--create", "-r", "--append", "-u", "--update", "-A", "--catenate", "--concatenate", "--delete":
			mode = "c"
		case "-t", "--list", "-d", "--diff", "--compare":
			return nil
		case "-O", "--to-stdout", "--to-command":
			if mode != "c" {
				return nil
			}
		case "-C", "--directory":
			dir = under(dir, o.val)
		case "-f", "--file":
			a := o.val
			archive = &a
		case "-g", "--listed-incremental", "--index-file":
			out = append(out, c.write(o.val, "tar "+o.name))
		}
	}
	_, absolute := hasOpt(opts, "-P", "--absolute-names")
	_, remove := hasOpt(opts, "--remove-files")
	switch {
	case mode == "x" && absolute:
		return append(out, c.write(Lit("/"), "tar -x -P (absolute names: anywhere)"))
	case mode == "x":
		return append(out, c.members("tar -x", dir, ops)...)
	case mode == "c" && archive != nil && archive.String() != "-":
		out = append(out, c.write(*archive, "tar"))
	}
	if mode == "c" && remove {
		for _, o := range ops {
			out = append(out, c.write(under(dir, o), "tar --remove-files"))
		}
	}
	return out
}

// members are what an extraction writes in dir: each member named when
// they are plain paths, else anything under dir.
func (c *Cmd) members(what string, dir Arg, names []Arg) []Write {
	var out []Write
	for _, n := range names {
		if s, ok := n.Known(); !ok || strings.ContainsAny(s, "*?[") {
			return []Write{c.write(dir, what+" (files under it)")}
		}
		out = append(out, c.write(under(dir, n), what))
	}
	if len(out) == 0 {
		return []Write{c.write(dir, what+" (files under it)")}
	}
	return out
}

// unzipWrites: unzip ZIP [MEMBER...] [-x EXCLUDE...] [-d DIR] writes its
// members under DIR; -l, -t, -v, -p and -Z write nothing.
func (c *Cmd) unzipWrites(args []Arg) []Write {
	dir := Lit(".")
	var ops []Arg
	junk := false
	for i := 0; i < len(args); i++ {
		s, ok := args[i].Text()
		switch {
		case !ok || !strings.HasPrefix(s, "-") || s == "-":
			ops = append(ops, args[i])
		case s == "-d" && i+1 < len(args):
			dir = args[i+1]
			i++
		case strings.HasPrefix(s, "-d") && len(s) > 2:
			dir = Lit(s[2:])
		case s == "-P" || s == "-x":
			// -P's password; -x's excluded names run to the next option.
			for i+1 < len(args) && (s == "-P" || !args[i+1].HasPrefix("-")) {
				i++
				if s == "-P" {
					break
				}
			}
		case strings.ContainsAny(s[1:], "ltvpZz"):
			return nil
		case strings.Contains(s, "j"):
			junk = true
		}
	}
	if len(ops) == 0 {
		return nil
	}
	if junk {
		return []Write{c.write(dir, "unzip (files under it)")}
	}
	return c.members("unzip", dir, ops[1:])
}

// patchWrites: the file named, or -o's; else the files the patch names,
// when st can read it (a here-document), stripped as -p says; a patch
// from a file st does not read may change any file.
func (c *Cmd) patchWrites(args []Arg) []Write {
	ops, opts := parseArgs(args, "pdioBDFrVYz", []string{"--strip", "--directory", "--input", "--output", "--prefix",
		"--ifdef", "--fuzz", "--reject-file", "--version-control", "--basename-prefix", "--suffix", "--backup-if-mismatch"})
	if _, dry := hasOpt(opts, "--dry-run", "-C", "--check"); dry {
		return nil
	}
	dir := c.Dir
	if d, ok := hasOpt(opts, "-d", "--directory"); ok {
		dir = JoinDir(c.Dir, d.val)
	}
	at := func(p Arg, what string) Write { return Write{Cmd: c, Path: p, Dir: dir, What: what} }
	var out []Write
	if r, ok := hasOpt(opts, "-r", "--reject-file"); ok {
		out = append(out, at(r.val, "patch -r"))
	}
	if o, ok := hasOpt(opts, "-o", "--output"); ok {
		return append(out, at(o.val, "patch -o"))
	}
	if len(ops) > 0 {
		return append(out, at(ops[0], "patch"))
	}
	_, fromFile := hasOpt(opts, "-i", "--input")
	text, known := c.Stdin.Text()
	if fromFile || !known {
		return append(out, Write{Cmd: c, Path: Lit("."), Dir: dir, Tree: true, What: "patch (from a file st does not read)"})
	}
	strip := -1
	if p, ok := hasOpt(opts, "-p", "--strip"); ok {
		n, err := strconv.Atoi(p.val.String())
		if err != nil {
			return append(out, Write{Cmd: c, Path: Lit("."), Dir: dir, Tree: true, What: "patch -p " + p.val.String()})
		}
		strip = n
	}
	names := patchNames(text, strip)
	if len(names) == 0 {
		return append(out, Write{Cmd: c, Path: Lit("."), Dir: dir, Tree: true, What: "patch (of names st cannot read)"})
	}
	for _, p := range names {
		out = append(out, at(Lit(p), "patch"))
	}
	return out
}

// patchNames are the files a unified or context diff names, stripped of
// strip leading folders; with no -p (strip < 0), patch takes the base
// name, or strips one folder from git's a/ and b/ names: both are given.
func patchNames(text string, strip int) []string {
	var out []string
	add := func(p string) {
		if p != "" && p != "/dev/null" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	for _, line := range strings.Split(text, "\n") {
		var name string
		for _, pre := range []string{"--- ", "+++ ", "*** "} {
			if rest, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), pre); ok {
				name, _, _ = strings.Cut(rest, "\t")
				name = strings.TrimSpace(name)
			}
		}
		if name == "" || name == "/dev/null" || strings.HasSuffix(name, "----") || strings.HasSuffix(name, "****") {
			continue // a context diff's hunk marks
		}
		switch {
		case strip >= 0:
			parts := strings.Split(name, "/")
			if strip < len(parts) {
				add(path.Clean(strings.Join(parts[strip:], "/")))
			}
		default:
			add(path.Base(name))
			if rest, ok := strings.CutPrefix(name, "a/"); ok {
				add(rest)
			} else if rest, ok := strings.CutPrefix(name, "b/"); ok {
				add(rest)
			}
		}
	}
	return out
}
