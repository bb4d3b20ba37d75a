package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/controlplane"
	"github.com/sophonz/st/internal/controlplane/cpserver"
	"github.com/sophonz/st/internal/cpconfig"
	"github.com/sophonz/st/internal/testutil"
)

// TestControlPlaneRefusesADataFolderNotItsOwn: the control plane's folder
// holds the account CAs' keys; one that another local user owns or may
// write, or that sits in a folder they could rename it out of, is refused
// by serve and by every command that opens it, and nothing is written
// there. With a real other user.
func TestControlPlaneRefusesADataFolderNotItsOwn(t *testing.T) {
	other := testutil.NewOtherUser(t)
	base := t.TempDir()
	home := filepath.Join(base, "home")
	mk := func(p string, perm os.FileMode) string {
		t.Helper()
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, perm); err != nil {
			t.Fatal(err)
		}
		return p
	}
	theirs := mk(filepath.Join(base, "theirs"), 0o700)
	if err := os.Chown(theirs, other.UID, other.GID); err != nil {
		t.Fatal(err)
	}
	open := mk(filepath.Join(base, "open"), 0o777)
	openParent := mk(filepath.Join(base, "open-parent"), 0o777)
	inOpen := mk(filepath.Join(openParent, "cp"), 0o700)
	for _, c := range []struct {
		data, want string
	}{
		{theirs, "the control plane's folder (--data) " + theirs + " belongs to another user (uid "},
		{open, "the control plane's folder (--data) " + open + " can be written by other users (its mode is 0777)"},
		{inOpen, "the control plane's folder (--data) " + inOpen + " is inside " + openParent + ", which other users may write (its mode is 0777, without the sticky bit)"},
		{filepath.Join(openParent, "new"), "is inside " + openParent + ", which other users may write"},
	} {
		for _, args := range [][]string{
			{"control-plane", "serve", "--data", c.data, "--listen", "127.0.0.1:0"},
			{"control-plane", "account", "add", "acme", "--data", c.data},
		} {
			// A serve that took the folder would serve until its context
			// ends: a deadline, after which its nil says it did.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			var out bytes.Buffer
			env := Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out,
				Getenv:       func(k string) string { return map[string]string{"ST_HOME": home}[k] },
				ControlPlane: controlplane.Service{NewMeter: func() cpconfig.Meter { return cpserver.NewMeter() }}}
			root := newRoot(&env)
			root.SetArgs(args)
			root.SetOut(&out)
			root.SetErr(&out)
			err := root.ExecuteContext(ctx)
			cancel()
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "\nTry: ") {
				t.Errorf("st %s: %v\nwant a refusal with %q and what to do", strings.Join(args, " "), err, c.want)
			} else if strings.Contains(c.want, "another user") && !strings.Contains(err.Error(), other.Name) {
				t.Errorf("st %s: the other user is not named (%s): %v", strings.Join(args, " "), other.Name, err)
			}
			if left, _ := os.ReadDir(c.data); len(left) != 0 {
				t.Errorf("st %s wrote into a folder it refused: %v", strings.Join(args, " "), left)
			}
		}
	}
}
