package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/privdir"
)

// CheckHome refuses an ST_HOME that is not this user's alone: one owned by
// another user, one that others may write (group or world), one inside a
// folder another user owns or may write (not sticky), one reached through
// another user's symlink (privdir.Check). Whoever can write there can
// plant st's config (its tmux socket, where gates are pushed), put a
// socket of their own where st's commands go, read or swap the web UI's
// secret and the runs' records. A BOUNDARY against another local user:
// every command that uses ST_HOME, and the daemon, ask it first. An
// ST_HOME that is not there yet is fine when the folders above it are:
// st makes it, mode 0700.
func CheckHome(home string) error {
	fi, err := os.Stat(home)
	if errors.Is(err, fs.ErrNotExist) {
		return privdir.Check(home, homeFolder) // the folders above it
	}
	if err != nil {
		return &api.Error{Kind: api.KindUsage, Message: fmt.Sprintf("ST_HOME %s cannot be read: %v", home, err),
			Hint: "point ST_HOME at a folder of your own, or unset it (st then uses ~/.sophonz)"}
	}
	if !fi.IsDir() {
		return &api.Error{Kind: api.KindUsage, Message: fmt.Sprintf("ST_HOME %s is not a folder", home),
			Hint: "point ST_HOME at a folder of your own, or unset it (st then uses ~/.sophonz)"}
	}
	return privdir.Check(home, homeFolder)
}

// homeFolder names ST_HOME in privdir's refusals.
var homeFolder = privdir.Folder{Name: "ST_HOME", Elsewhere: "unset ST_HOME (st then uses ~/.sophonz)"}
