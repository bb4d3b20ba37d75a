package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"strconv"
	"syscall"

	"github.com/sophonz/st/internal/api"
)

// CheckHome refuses an ST_HOME that is not this user's alone: one owned by
// another user, or one that others may write (group or world). Whoever can
// write there can plant st's config (its tmux socket, where gates are
// pushed), put a socket of their own where st's commands go, read or swap
// the web UI's secret and the runs' records. A BOUNDARY against another
// local user: every command that uses ST_HOME, and the daemon, ask it
// first. An ST_HOME that is not there yet is fine: st makes it, mode 0700.
func CheckHome(home string) error {
	fi, err := os.Stat(home)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return &api.Error{Kind: api.KindUsage, Message: fmt.Sprintf("ST_HOME %s cannot be read: %v", home, err),
			Hint: "point ST_HOME at a folder of your own, or unset it (st then uses ~/.sophonz)"}
	}
	if !fi.IsDir() {
		return &api.Error{Kind: api.KindUsage, Message: fmt.Sprintf("ST_HOME %s is not a folder", home),
			Hint: "point ST_HOME at a folder of your own, or unset it (st then uses ~/.sophonz)"}
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil // no owner to check on this system
	}
	if uid := os.Getuid(); int(st.Uid) != uid {
		who := "who has no name here"
		if u, err := user.LookupId(strconv.Itoa(int(st.Uid))); err == nil {
			who = u.Username
		}
		return &api.Error{Kind: api.KindUsage,
			Message: fmt.Sprintf("ST_HOME %s belongs to another user (uid %d, %s), not to you (uid %d): whatever st keeps there would be theirs to read and change, so st does not use it", home, st.Uid, who, uid),
			Hint:    fmt.Sprintf("use a folder of your own: unset ST_HOME (st then uses ~/.sophonz), or chown -R %d %s if it is yours", uid, home)}
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return &api.Error{Kind: api.KindUsage,
			Message: fmt.Sprintf("ST_HOME %s can be written by other users (its mode is %04o): they could put a config, a socket or files of their own there, so st does not use it", home, perm),
			Hint:    "chmod 700 " + home + " (st makes it so), then run the command again"}
	}
	return nil
}
