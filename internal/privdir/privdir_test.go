package privdir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sophonz/st/internal/testutil"
)

func TestMain(m *testing.M) { testutil.Main(m) }

var testFolder = Folder{Name: "ST_HOME", Elsewhere: "unset ST_HOME"}

// mkdir makes p with mode perm (chmod: the umask would take bits away).
func mkdir(t *testing.T, p string, perm os.FileMode) string {
	t.Helper()
	if err := os.Mkdir(p, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, perm); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCheckRefusesWhatAnotherUserCouldSwap: the folder, every folder above
// it and every symlink on the way, with a real other user.
func TestCheckRefusesWhatAnotherUserCouldSwap(t *testing.T) {
	other := testutil.NewOtherUser(t)
	base := t.TempDir()
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	chown := func(p string) string {
		t.Helper()
		if err := os.Lchown(p, other.UID, other.GID); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ownHome := mkdir(t, filepath.Join(base, "own"), 0o700)
	openParent := mkdir(t, filepath.Join(base, "open"), 0o777)
	mkdir(t, filepath.Join(openParent, "h"), 0o700)
	groupParent := mkdir(t, filepath.Join(base, "group"), 0o775)
	mkdir(t, filepath.Join(groupParent, "h"), 0o700)
	sticky := mkdir(t, filepath.Join(base, "sticky"), 0o777|os.ModeSticky)
	mkdir(t, filepath.Join(sticky, "h"), 0o700)
	theirsAbove := chown(mkdir(t, filepath.Join(base, "theirs"), 0o755))
	mkdir(t, filepath.Join(theirsAbove, "h"), 0o700)
	theirHome := chown(mkdir(t, filepath.Join(base, "their-home"), 0o700))
	// A symlink of theirs in a sticky folder, as /tmp is: they may remove
	// it and point a new one at a folder of theirs.
	if err := os.Symlink(ownHome, filepath.Join(sticky, "their-link")); err != nil {
		t.Fatal(err)
	}
	chown(filepath.Join(sticky, "their-link"))
	if err := os.Symlink(ownHome, filepath.Join(sticky, "my-link")); err != nil {
		t.Fatal(err)
	}
	// A relative symlink to a folder inside an open one.
	if err := os.Symlink("../open/h", filepath.Join(ownHome, "to-open")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("loop", filepath.Join(base, "loop")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dir  string
		want string // "" takes it
	}{
		{ownHome, ""},
		{filepath.Join(ownHome, "not-yet", "there"), ""},
		{filepath.Join(sticky, "h"), ""},
		{filepath.Join(sticky, "my-link"), ""},
		{filepath.Join(sticky, "my-link", "..", "own"), ""},
		{filepath.Join(openParent, "h"), "ST_HOME " + openParent + "/h is inside " + openParent + ", which other users may write (its mode is 0777, without the sticky bit)"},
		{filepath.Join(openParent, "not-yet"), "is inside " + openParent + ", which other users may write"},
		{filepath.Join(groupParent, "h"), "which other users may write (its mode is 0775, without the sticky bit)"},
		{filepath.Join(theirsAbove, "h"), "is inside " + theirsAbove + ", which belongs to another user (uid "},
		{theirHome, "ST_HOME " + theirHome + " belongs to another user (uid "},
		{filepath.Join(sticky, "their-link"), "is reached through the symlink " + sticky + "/their-link, which belongs to another user (uid "},
		{filepath.Join(ownHome, "to-open"), "is inside " + openParent + ", which other users may write"},
		{filepath.Join(base, "loop"), "goes through more than 40 symlinks"},
		{openParent, "can be written by other users (its mode is 0777)"},
	} {
		err := Check(c.dir, testFolder)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("Check(%s) refused a folder of this user's alone: %v", c.dir, err)
		case c.want != "" && err == nil:
			t.Errorf("Check(%s) took it; want a refusal with %q", c.dir, c.want)
		case c.want != "" && (!strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "\nTry: ")):
			t.Errorf("Check(%s) = %v\nwant %q and what to do", c.dir, err, c.want)
		case c.want != "" && strings.Contains(c.want, "another user") && !strings.Contains(err.Error(), other.Name):
			t.Errorf("Check(%s) = %v\nwant the other user named (%s)", c.dir, err, other.Name)
		}
	}
}
