package guard

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	"github.com/sophonz/st/internal/shell"
)

// programOnDisk is the program a command's path really runs when it is a
// link to, or a copy of, a program the guard has rules for (ln -s
// /usr/bin/tmux ./t, in an earlier command); "" when it is not.
func (ch *checker) programOnDisk(c *shell.Cmd) string {
	p, ok := c.Args[0].Known()
	if !ok || !strings.Contains(p, "/") {
		return ""
	}
	full := ch.abs(c, p)
	if full == "" {
		return ""
	}
	real, err := filepath.EvalSymlinks(full)
	if err != nil {
		return ""
	}
	if base := path.Base(real); isRiskyName(base) {
		return base
	}
	fi, err := os.Stat(real)
	if err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	for _, name := range diskChecked {
		bin, err := exec.LookPath(name)
		if err != nil {
			continue
		}
		bi, err := os.Stat(bin)
		if err != nil {
			continue
		}
		if os.SameFile(fi, bi) || (fi.Size() == bi.Size() && sameContent(real, bin)) {
			return name
		}
	}
	return ""
}

// diskChecked are the programs a copy of which is looked for.
var diskChecked = []string{"tmux", "pkill", "killall", "kill", "fuser", "bash", "sh", "dash", "zsh", "env", "sudo", "busybox"}

func sameContent(a, b string) bool {
	fa, err := os.Open(a)
	if err != nil {
		return false
	}
	defer fa.Close()
	fb, err := os.Open(b)
	if err != nil {
		return false
	}
	defer fb.Close()
	ba, bb := make([]byte, 64<<10), make([]byte, 64<<10)
	for {
		na, ea := io.ReadFull(fa, ba)
		nb, eb := io.ReadFull(fb, bb)
		if na != nb || !bytes.Equal(ba[:na], bb[:nb]) {
			return false
		}
		if ea != nil || eb != nil {
			return ea != nil && eb != nil
		}
	}
}

// renamed is c with its program named name (for the rules of name).
func renamed(c *shell.Cmd, name string) *shell.Cmd {
	n := *c
	n.Args = append([]shell.Arg{shell.Lit(name)}, c.Args[1:]...)
	return &n
}
