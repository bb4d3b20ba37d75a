package atlogin

import (
	"bytes"
	"encoding/xml"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestLoginServiceLinux(t *testing.T) {
	p := LoginPaths{UserHome: "/home/u", STBin: "/opt/my tools/st", STHome: "/home/u/st 100%", LogPath: "/home/u/st 100%/daemon.log", Path: "/usr/bin:/bin"}
	s, err := LoginServiceFor("linux", p)
	if err != nil {
		t.Fatal(err)
	}
	if s.Path != "/home/u/.config/systemd/user/st.service" || s.Link != "/home/u/.config/systemd/user/default.target.wants/st.service" || s.LinkTo != s.Path {
		t.Errorf("paths: %+v", s)
	}
	want := `# Written by st up --at-login; st down --at-login removes it.
[Unit]
Description=st: one coding agent runs a team of others in tmux

[Service]
Type=simple
ExecStart="/opt/my tools/st" daemon
Environment="ST_HOME=/home/u/st 100%%"
Environment="PATH=/usr/bin:/bin"
StandardOutput=append:/home/u/st 100%%/daemon.log
StandardError=append:/home/u/st 100%%/daemon.log
KillMode=process
Restart=on-failure
RestartSec=2
RestartPreventExitStatus=4

[Install]
WantedBy=default.target
`
	if string(s.Content) != want {
		t.Errorf("unit:\n%s\nwant:\n%s", s.Content, want)
	}
	// XDG_CONFIG_HOME is honoured; no ST_HOME set, none written.
	s, _ = LoginServiceFor("linux", LoginPaths{UserHome: "/home/u", ConfigHome: "/cfg", STBin: "/usr/local/bin/st"})
	if s.Path != "/cfg/systemd/user/st.service" || bytes.Contains(s.Content, []byte("ST_HOME")) || !bytes.Contains(s.Content, []byte("ExecStart=\"/usr/local/bin/st\" daemon\n")) {
		t.Errorf("with XDG_CONFIG_HOME: %s\n%s", s.Path, s.Content)
	}
	// systemd itself reads the unit without a complaint, where it is here.
	if sa, err := exec.LookPath("systemd-analyze"); err == nil {
		dir := t.TempDir()
		bin := filepath.Join(dir, "st")
		os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755)
		s, _ := LoginServiceFor("linux", LoginPaths{UserHome: dir, STBin: bin, STHome: dir, LogPath: filepath.Join(dir, "daemon.log"), Path: "/usr/bin:/bin"})
		unit := filepath.Join(dir, "st.service")
		os.WriteFile(unit, s.Content, 0o644)
		out, err := exec.Command(sa, "verify", "--man=no", unit).CombinedOutput()
		if err != nil || len(bytes.TrimSpace(out)) > 0 {
			t.Errorf("systemd-analyze verify: %v\n%s", err, out)
		}
	}
}

func TestLoginServiceMac(t *testing.T) {
	p := LoginPaths{UserHome: "/Users/u", STBin: "/Users/u/go/bin/st", STHome: "/Users/u/a&b", LogPath: "/Users/u/a&b/daemon.log", Path: "/opt/homebrew/bin:/usr/bin"}
	s, err := LoginServiceFor("darwin", p)
	if err != nil {
		t.Fatal(err)
	}
	if s.Path != "/Users/u/Library/LaunchAgents/com.github.sophonz.st.plist" || s.Link != "" {
		t.Errorf("paths: %+v", s)
	}
	// A well-formed plist whose keys and values are the ones launchd needs.
	got := map[string]string{}
	d := xml.NewDecoder(bytes.NewReader(s.Content))
	var key, path []string
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, s.Content)
		}
		switch x := tok.(type) {
		case xml.StartElement:
			path = append(path, x.Name.Local)
			if x.Name.Local == "true" {
				got[strings.Join(key, "/")] = "true"
			}
		case xml.EndElement:
			path = path[:len(path)-1]
		case xml.CharData:
			v := strings.TrimSpace(string(x))
			if v == "" {
				continue
			}
			switch path[len(path)-1] {
			case "key":
				if len(path) == 3 { // plist/dict/key
					key = []string{v}
				} else {
					key = append(key[:1], v)
				}
			case "string":
				k := strings.Join(key, "/")
				if got[k] != "" {
					got[k] += " "
				}
				got[k] += v
			}
		}
	}
	want := map[string]string{
		"Label": "com.github.sophonz.st", "ProgramArguments": "/Users/u/go/bin/st daemon",
		"EnvironmentVariables/ST_HOME": "/Users/u/a&b", "EnvironmentVariables/PATH": "/opt/homebrew/bin:/usr/bin",
		"RunAtLoad": "true", "AbandonProcessGroup": "true",
		"StandardOutPath": "/Users/u/a&b/daemon.log", "StandardErrorPath": "/Users/u/a&b/daemon.log",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("keys: %v", got)
	}
}

func TestLoginServiceElsewhere(t *testing.T) {
	if _, err := LoginServiceFor("windows", LoginPaths{STBin: "/st"}); err == nil || !strings.Contains(err.Error(), "Linux (systemd) and macOS (launchd)") {
		t.Errorf("windows: %v", err)
	}
	if _, err := LoginServiceFor("linux", LoginPaths{STBin: "st"}); err == nil {
		t.Error("a relative st path was taken")
	}
}

// hostilePath is a PATH with what st up --at-login must carry over as it
// is: a newline (which ended the line and began a directive of its own),
// $, %, quotes, spaces, a backslash, a tab and a C1 control.
const hostilePath = "/opt/my tools/bin:/x$HOME/y:/p%h/q:/q\"uote'/r:/n\nExecStartPre=/tmp/pwned/s:/b\\s:/t\tab:/c\u009bz:/usr/bin:/bin"

// TestLoginUnitQuoting has systemd itself read the unit st writes (the
// debug dump of systemd-analyze verify): the PATH, ST_HOME and the log's
// path come out exactly as given, st's path with a space, $ and % is the
// program systemd finds, and no line of the values became a directive.
func TestLoginUnitQuoting(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("systemd, which reads the unit here, is Linux's")
	}
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Fatalf("systemd-analyze is not installed: this test has systemd read the unit. Try: apt-get install systemd (scripts/test does)")
	}
	dir := t.TempDir()
	home := filepath.Join(dir, "st home 100% $HOME")
	binDir := filepath.Join(dir, "my bin $v 50%")
	os.MkdirAll(home, 0o700)
	os.MkdirAll(binDir, 0o755)
	bin := filepath.Join(binDir, "st")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(home, "daemon.log")
	s, err := LoginServiceFor("linux", LoginPaths{UserHome: dir, STBin: bin, STHome: home, LogPath: log, Path: hostilePath})
	if err != nil {
		t.Fatal(err)
	}
	unit := filepath.Join(dir, "st.service")
	os.WriteFile(unit, s.Content, 0o644)
	cmd := exec.Command(sa, "verify", "--man=no", unit)
	cmd.Env = append(os.Environ(), "SYSTEMD_LOG_LEVEL=debug")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze verify: %v\n%s\nthe unit:\n%s", err, tail(string(out), 15), s.Content)
	}
	if w := grepUnit(out, unit); w != "" {
		t.Errorf("systemd warned about the unit:\n%s\nthe unit:\n%s", w, s.Content)
	}
	dump := string(out)
	for _, want := range []string{
		"\t\tEnvironment: PATH=" + hostilePath + "\n\t\t",
		"\t\tEnvironment: ST_HOME=" + home + "\n\t\t",
		"\t\tStandardOutputFileToAppend: " + log + "\n",
		"\t\tStandardErrorFileToAppend: " + log + "\n",
	} {
		if !strings.Contains(dump, want) {
			t.Errorf("systemd did not read %q from the unit:\n%s", want, s.Content)
		}
	}
	if strings.Contains(dump, "-> ExecStartPre:") || !strings.Contains(dump, "-> ExecStart:") {
		t.Errorf("a line of PATH became a directive of the unit:\n%s", s.Content)
	}
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// grepUnit is what systemd said about one unit file: its warnings.
func grepUnit(out []byte, unit string) string {
	var lines []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, unit+":") || strings.Contains(l, "st.service: ") && strings.Contains(l, "ail") {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

// What a unit or plist cannot say is refused with why, and nothing is
// written: systemd runs no program whose path has a quote, a backslash or
// a control character, nor reads a log path with a line break or an
// environment value that is not UTF-8; a plist (XML) holds no C0 control
// but tab and line breaks.
func TestLoginServiceRefusesWhatItCannotSay(t *testing.T) {
	for _, tc := range []struct {
		goos string
		p    LoginPaths
		want string
	}{
		{"linux", LoginPaths{STBin: "/opt/q\"uote/st"}, `st's path "/opt/q\"uote/st" has a quote`},
		{"linux", LoginPaths{STBin: "/opt/back\\slash/st"}, "has a backslash"},
		{"linux", LoginPaths{STBin: "/opt/new\nline/st"}, "has a line break"},
		{"linux", LoginPaths{STBin: "/usr/bin/st", STHome: "/h/new\nline", LogPath: "/h/new\nline/daemon.log"}, "the log's path"},
		{"linux", LoginPaths{STBin: "/usr/bin/st", Path: "/usr/bin:/bad\xff"}, "PATH"},
		{"darwin", LoginPaths{STBin: "/usr/bin/st", Path: "/usr/bin:/bell\a"}, "control character (U+0007)"},
		{"darwin", LoginPaths{STBin: "/usr/bin/st", STHome: "/h/bad\xff"}, "ST_HOME"},
	} {
		_, err := LoginServiceFor(tc.goos, tc.p)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %+v: %v, want an error with %q", tc.goos, tc.p, err, tc.want)
		}
	}
}

// The plist's values come back exactly from an XML reader: a newline, a
// carriage return, a tab, $, %, quotes, & and < in PATH.
func TestLaunchdPlistQuoting(t *testing.T) {
	path := hostilePath + ":/cr\r/amp&/lt</gt>"
	s, err := LoginServiceFor("darwin", LoginPaths{UserHome: "/Users/u", STBin: "/Users/u/my \"bin\"/st", STHome: "/Users/u/a&b", LogPath: "/Users/u/a&b/daemon.log", Path: path})
	if err != nil {
		t.Fatal(err)
	}
	values := plistStrings(t, s.Content)
	if values["PATH"] != path {
		t.Errorf("PATH read back as %q, want %q", values["PATH"], path)
	}
	if values["ProgramArguments"] != "/Users/u/my \"bin\"/st" {
		t.Errorf("st's path read back as %q", values["ProgramArguments"])
	}
}

// plistStrings reads the first <string> after each <key> of a plist.
func plistStrings(t *testing.T, content []byte) map[string]string {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(content))
	out := map[string]string{}
	var key, elem string
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, content)
		}
		switch x := tok.(type) {
		case xml.StartElement:
			elem = x.Name.Local
		case xml.EndElement:
			elem = ""
		case xml.CharData:
			switch elem {
			case "key":
				key = string(x)
			case "string":
				if _, seen := out[key]; !seen && key != "" {
					out[key] = string(x)
				}
			}
		}
	}
}
