package atlogin

import (
	"bytes"
	"encoding/xml"
	"io"
	"os"
	"os/exec"
	"path/filepath"
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
Environment=PATH=/usr/bin:/bin
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
	if s.Path != "/cfg/systemd/user/st.service" || bytes.Contains(s.Content, []byte("ST_HOME")) || !bytes.Contains(s.Content, []byte("ExecStart=/usr/local/bin/st daemon\n")) {
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
