// Package atlogin is what starts st's daemon when the user logs in: the
// systemd user unit (Linux) or launchd agent (macOS) that st up --at-login
// writes and st down --at-login removes, and the exit status by which the
// daemon tells that service not to start it again. It imports nothing of
// st: the command line writes these files without linking the daemon.
package atlogin

import (
	"fmt"
	"path/filepath"
	"strings"
)

// ExitRunning is st daemon's exit status when another daemon holds
// ST_HOME: the login service does not restart it for that.
const ExitRunning = 4

// LoginService is what starts st's daemon when the user logs in: a
// systemd user unit on Linux, a launchd agent on macOS. Both are files
// only; the service manager reads them at the next login.
type LoginService struct {
	// Path is the file that describes the service.
	Path    string
	Content []byte
	// Link, on Linux, is the symlink that enables the unit (what
	// systemctl --user enable makes), pointing at LinkTo.
	Link, LinkTo string
	// Manager names the service manager, for messages.
	Manager string
}

// LoginPaths are where the files go and what they name.
type LoginPaths struct {
	UserHome string // $HOME
	// ConfigHome is $XDG_CONFIG_HOME ("" = ~/.config).
	ConfigHome string
	STBin      string // st's absolute path
	// STHome is $ST_HOME when set ("" = st's default): written into the
	// service, so the daemon at login serves the same home.
	STHome string
	// LogPath is where the daemon's output goes ($ST_HOME/daemon.log, as
	// with st up).
	LogPath string
	// Path is the PATH the daemon gets: the one st up --at-login ran
	// with, since the service manager's own PATH may not find tmux,
	// claude and codex, and worker windows get the daemon's.
	Path string
}

// LoginServiceFor is the login service of goos ("linux", "darwin").
func LoginServiceFor(goos string, p LoginPaths) (LoginService, error) {
	if !filepath.IsAbs(p.STBin) {
		return LoginService{}, fmt.Errorf("st's path %q is not absolute", p.STBin)
	}
	switch goos {
	case "linux":
		dir := p.ConfigHome
		if dir == "" {
			dir = filepath.Join(p.UserHome, ".config")
		}
		unit := filepath.Join(dir, "systemd", "user", "st.service")
		return LoginService{Path: unit, Content: systemdUnit(p), Manager: "systemd (user)",
			Link: filepath.Join(dir, "systemd", "user", "default.target.wants", "st.service"), LinkTo: unit}, nil
	case "darwin":
		return LoginService{Path: filepath.Join(p.UserHome, "Library", "LaunchAgents", LaunchdLabel+".plist"),
			Content: launchdPlist(p), Manager: "launchd"}, nil
	}
	return LoginService{}, fmt.Errorf("st up --at-login knows Linux (systemd) and macOS (launchd), not %s", goos)
}

// LaunchdLabel names st's launchd agent.
const LaunchdLabel = "com.github.sophonz.st"

func systemdUnit(p LoginPaths) []byte {
	var b strings.Builder
	b.WriteString("# Written by st up --at-login; st down --at-login removes it.\n")
	b.WriteString("[Unit]\nDescription=st: one coding agent runs a team of others in tmux\n\n[Service]\nType=simple\n")
	fmt.Fprintf(&b, "ExecStart=%s daemon\n", systemdQuote(p.STBin))
	if p.STHome != "" {
		fmt.Fprintf(&b, "Environment=%s\n", systemdQuote("ST_HOME="+p.STHome))
	}
	if p.Path != "" {
		fmt.Fprintf(&b, "Environment=%s\n", systemdQuote("PATH="+p.Path))
	}
	if p.LogPath != "" {
		fmt.Fprintf(&b, "StandardOutput=append:%s\nStandardError=append:%s\n", systemdEscape(p.LogPath), systemdEscape(p.LogPath))
	}
	// Stopping the service stops st only: a tmux server st started (and
	// every agent in it) is in the service's cgroup too, and must live on.
	b.WriteString("KillMode=process\n")
	// A crash is restarted; st down (exit 0) and another daemon holding
	// ST_HOME (ExitRunning) are not.
	fmt.Fprintf(&b, "Restart=on-failure\nRestartSec=2\nRestartPreventExitStatus=%d\n", ExitRunning)
	b.WriteString("\n[Install]\nWantedBy=default.target\n")
	return []byte(b.String())
}

// systemdEscape escapes what systemd expands in a unit's values: % and \.
func systemdEscape(s string) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	return strings.ReplaceAll(s, "%", "%%")
}

// systemdQuote is s as one word of a unit's command line or Environment=.
func systemdQuote(s string) string {
	s = systemdEscape(s)
	if !strings.ContainsAny(s, " \t\"'$;") {
		return s
	}
	s = strings.ReplaceAll(s, `"`, `\"`)
	s = strings.ReplaceAll(s, "$", "$$")
	return `"` + s + `"`
}

func launchdPlist(p LoginPaths) []byte {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<!-- Written by st up with at-login; st down with at-login removes it. -->
<plist version="1.0">
<dict>
`)
	kv := func(k, v string) { fmt.Fprintf(&b, "\t<key>%s</key>\n\t<string>%s</string>\n", k, xmlEscape(v)) }
	kv("Label", LaunchdLabel)
	fmt.Fprintf(&b, "\t<key>ProgramArguments</key>\n\t<array>\n\t\t<string>%s</string>\n\t\t<string>daemon</string>\n\t</array>\n", xmlEscape(p.STBin))
	if p.STHome != "" || p.Path != "" {
		b.WriteString("\t<key>EnvironmentVariables</key>\n\t<dict>\n")
		for _, e := range [][2]string{{"ST_HOME", p.STHome}, {"PATH", p.Path}} {
			if e[1] != "" {
				fmt.Fprintf(&b, "\t\t<key>%s</key>\n\t\t<string>%s</string>\n", e[0], xmlEscape(e[1]))
			}
		}
		b.WriteString("\t</dict>\n")
	}
	// At login only: a crashed st comes back with the next command
	// that needs it, and another daemon on ST_HOME is no failure to retry.
	b.WriteString("\t<key>RunAtLoad</key>\n\t<true/>\n")
	// A tmux server st started (and its agents) outlives the daemon.
	b.WriteString("\t<key>AbandonProcessGroup</key>\n\t<true/>\n")
	if p.LogPath != "" {
		kv("StandardOutPath", p.LogPath)
		kv("StandardErrorPath", p.LogPath)
	}
	b.WriteString("</dict>\n</plist>\n")
	return []byte(b.String())
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&apos;").Replace(s)
}
