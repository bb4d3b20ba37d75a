// Package privdir checks the folders st keeps keys, tokens and state in
// (ST_HOME, the control plane's --data): one check for both programs, so
// that a folder another local user could swap is refused the same way
// wherever st would trust what it finds there.
//
// A folder is this user's alone when it is theirs and no one else may
// write it, and when no one else can move it away and put one of their
// own in its place: every folder above it, up to /, belongs to this user
// or root and is open to no one else's writes unless it has the sticky
// bit (as /tmp has), and every symlink on the way belongs to this user
// or root. OpenSSH checks the folders above a key file the same way.
package privdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/sophonz/st/internal/api"
)

// maxLinks is how many symlinks a path may pass through (Linux's
// MAXSYMLINKS) before it is taken for a loop.
const maxLinks = 40

// Folder names a folder for the messages: Name is how the user knows it
// ("ST_HOME", "the control plane's folder"), Elsewhere what to do to use
// another ("unset ST_HOME (st then uses ~/.sophonz)").
type Folder struct {
	Name      string
	Elsewhere string
}

// Check refuses dir unless it is this user's alone (the package doc says
// what that is). A folder not there yet is checked as far as it is: st
// makes the rest, mode 0700. A BOUNDARY against another local user: each
// program asks it before it reads or writes anything in the folder, and
// again once it has made it.
//
// The refusal is a usage error that says what is wrong and what to do.
func Check(dir string, f Folder) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return f.refuse(fmt.Sprintf("%s %s cannot be read: %v", f.Name, dir, err), f.Elsewhere)
	}
	return walk(abs, dir, f)
}

// walk goes down abs one name at a time from /, as the kernel does,
// checking every folder it passes through and every symlink it follows.
func walk(abs, dir string, f Folder) error {
	cur := "/"
	if err := checkAbove(cur, dir, f); err != nil {
		return err
	}
	rest := names(abs)
	links := 0
	for len(rest) > 0 {
		name := rest[0]
		rest = rest[1:]
		if name == ".." {
			cur = filepath.Dir(cur) // cur has no symlinks left in it
			continue
		}
		p := filepath.Join(cur, name)
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // st makes the rest, mode 0700 (checked again after)
		}
		if err != nil {
			return f.refuse(fmt.Sprintf("%s %s cannot be read (%s: %v)", f.Name, dir, p, err), f.Elsewhere)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			if links++; links > maxLinks {
				return f.refuse(fmt.Sprintf("%s %s goes through more than %d symlinks (a loop?)", f.Name, dir, maxLinks), f.Elsewhere)
			}
			if err := checkLink(p, fi, dir, f); err != nil {
				return err
			}
			target, err := os.Readlink(p)
			if err != nil {
				return f.refuse(fmt.Sprintf("%s %s cannot be read (%s: %v)", f.Name, dir, p, err), f.Elsewhere)
			}
			if filepath.IsAbs(target) {
				cur = "/"
			}
			rest = append(names(target), rest...)
			continue
		}
		if !fi.IsDir() {
			return f.refuse(fmt.Sprintf("%s %s is not a folder (%s is a file)", f.Name, dir, p), f.Elsewhere)
		}
		cur = p
		if len(rest) == 0 {
			return checkLast(p, fi, dir, f)
		}
		if err := checkAbove(p, dir, f); err != nil {
			return err
		}
	}
	return nil
}

// names splits a path into its names, leaving out empty ones and ".".
func names(p string) []string {
	var out []string
	for _, n := range strings.Split(p, "/") {
		if n != "" && n != "." {
			out = append(out, n)
		}
	}
	return out
}

// checkLast: the folder itself is this user's, and no one else may write
// it (whoever may could put a config, a socket or a key of their own there).
func checkLast(p string, fi fs.FileInfo, dir string, f Folder) error {
	uid := os.Getuid()
	if owner, ok := ownerOf(fi); ok && owner != uid {
		return f.refuse(fmt.Sprintf("%s %s belongs to another user (uid %d, %s), not to you (uid %d): whatever st keeps there would be theirs to read and change, so st does not use it", f.Name, at(dir, p), owner, nameOf(owner), uid),
			fmt.Sprintf("use a folder of your own: %s, or chown -R %d %s if it is yours", f.Elsewhere, uid, p))
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return f.refuse(fmt.Sprintf("%s %s can be written by other users (its mode is %04o): they could put a config, a socket or files of their own there, so st does not use it", f.Name, at(dir, p), perm),
			"chmod 700 "+p+" (st makes it so), then run the command again")
	}
	return nil
}

// checkAbove: a folder above is this user's or root's, and no one else
// may write it unless it is sticky (then they may not rename what is not
// theirs): whoever may could move the folder below away and put one of
// their own in its place.
func checkAbove(p, dir string, f Folder) error {
	fi, err := os.Stat(p) // p has no symlinks left in it
	if err != nil {
		return f.refuse(fmt.Sprintf("%s %s cannot be read (%s: %v)", f.Name, dir, p, err), f.Elsewhere)
	}
	uid := os.Getuid()
	if owner, ok := ownerOf(fi); ok && owner != uid && owner != 0 {
		return f.refuse(fmt.Sprintf("%s %s is inside %s, which belongs to another user (uid %d, %s): they could move it away and put a folder of their own in its place, so st does not use it", f.Name, dir, p, owner, nameOf(owner)),
			"use a folder whose every folder above is yours or root's: "+f.Elsewhere)
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 && fi.Mode()&fs.ModeSticky == 0 {
		return f.refuse(fmt.Sprintf("%s %s is inside %s, which other users may write (its mode is %04o, without the sticky bit): they could move it away and put a folder of their own in its place, so st does not use it", f.Name, dir, p, perm),
			fmt.Sprintf("chmod go-w %s (or chmod +t %s, as /tmp has), or use a folder elsewhere: %s", p, p, f.Elsewhere))
	}
	return nil
}

// checkLink: a symlink on the way is this user's or root's (whoever owns
// it may replace it where its folder lets them, as /tmp does).
func checkLink(p string, fi fs.FileInfo, dir string, f Folder) error {
	uid := os.Getuid()
	if owner, ok := ownerOf(fi); ok && owner != uid && owner != 0 {
		return f.refuse(fmt.Sprintf("%s %s is reached through the symlink %s, which belongs to another user (uid %d, %s): they could point it at a folder of their own, so st does not use it", f.Name, dir, p, owner, nameOf(owner)),
			"give the folder's real path, or use a folder of your own: "+f.Elsewhere)
	}
	return nil
}

// at names the folder, and where it really is when a symlink led there.
func at(dir, p string) string {
	if filepath.Clean(dir) == p {
		return dir
	}
	return dir + " (" + p + ")"
}

func ownerOf(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false // no owner to check on this system
	}
	return int(st.Uid), true
}

func nameOf(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return u.Username
	}
	return "who has no name here"
}

func (f Folder) refuse(msg, hint string) error {
	return &api.Error{Kind: api.KindUsage, Message: msg, Hint: hint}
}
