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
	"unicode/utf8"

	"github.com/sophonz/st/internal/plain"
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

// LoginServiceFor is the login service of goos ("linux", "darwin"). A
// value the service's file cannot say as it is (see systemdUnit and
// launchdPlist) is an error that names it: nothing is written then.
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
		content, err := systemdUnit(p)
		if err != nil {
			return LoginService{}, err
		}
		unit := filepath.Join(dir, "systemd", "user", "st.service")
		return LoginService{Path: unit, Content: content, Manager: "systemd (user)",
			Link: filepath.Join(dir, "systemd", "user", "default.target.wants", "st.service"), LinkTo: unit}, nil
	case "darwin":
		content, err := launchdPlist(p)
		if err != nil {
			return LoginService{}, err
		}
		return LoginService{Path: filepath.Join(p.UserHome, "Library", "LaunchAgents", LaunchdLabel+".plist"),
			Content: content, Manager: "launchd"}, nil
	}
	return LoginService{}, fmt.Errorf("st up --at-login knows Linux (systemd) and macOS (launchd), not %s", goos)
}

// LaunchdLabel names st's launchd agent.
const LaunchdLabel = "com.github.sophonz.st"

// systemdUnit writes the unit, each value quoted as systemd reads it back
// exactly (systemd.syntax, systemd.exec; checked against systemd 252's
// own reading in TestLoginUnitQuoting): ExecStart's program and
// Environment= as one double-quoted word with C escapes (a line break is
// \n, so it never ends the line and starts a directive of its own) and %
// doubled (a specifier otherwise); $ is taken as it is in both (systemd
// expands variables in a program's arguments, not in its path or in
// Environment=). The log's path after append: is taken as it is, but %.
func systemdUnit(p LoginPaths) ([]byte, error) {
	if err := systemdProgram(p.STBin); err != nil {
		return nil, err
	}
	for _, e := range [][2]string{{"ST_HOME", p.STHome}, {"PATH", p.Path}} {
		if !utf8.ValidString(e[1]) {
			return nil, fmt.Errorf("%s has bytes that are not UTF-8, which systemd drops from a unit's Environment=; st up --at-login writes it as it is", e[0])
		}
	}
	if err := plain.Line(p.LogPath); err != nil {
		return nil, fmt.Errorf("the log's path %q cannot be a systemd StandardOutput=: %v; use an ST_HOME without it", p.LogPath, err)
	}
	var b strings.Builder
	b.WriteString("# Written by st up --at-login; st down --at-login removes it.\n")
	b.WriteString("[Unit]\nDescription=st: one coding agent runs a team of others in tmux\n\n[Service]\nType=simple\n")
	fmt.Fprintf(&b, "ExecStart=%s daemon\n", systemdWord(p.STBin))
	if p.STHome != "" {
		fmt.Fprintf(&b, "Environment=%s\n", systemdWord("ST_HOME="+p.STHome))
	}
	if p.Path != "" {
		fmt.Fprintf(&b, "Environment=%s\n", systemdWord("PATH="+p.Path))
	}
	if p.LogPath != "" {
		log := strings.ReplaceAll(p.LogPath, "%", "%%")
		fmt.Fprintf(&b, "StandardOutput=append:%s\nStandardError=append:%s\n", log, log)
	}
	// Stopping the service stops st only: a tmux server st started (and
	// every agent in it) is in the service's cgroup too, and must live on.
	b.WriteString("KillMode=process\n")
	// A crash is restarted; st down (exit 0) and another daemon holding
	// ST_HOME (ExitRunning) are not.
	fmt.Fprintf(&b, "Restart=on-failure\nRestartSec=2\nRestartPreventExitStatus=%d\n", ExitRunning)
	b.WriteString("\n[Install]\nWantedBy=default.target\n")
	return []byte(b.String()), nil
}

// systemdProgram refuses a path systemd runs no program from: it refuses
// an executable name with a quote, a backslash or a control character
// ("Executable name contains special characters"), however quoted.
func systemdProgram(path string) error {
	why := ""
	switch {
	case plain.Line(path) != nil:
		why = strings.TrimPrefix(plain.Line(path).Error(), "it ")
	case strings.ContainsAny(path, `"'`):
		why = "has a quote"
	case strings.Contains(path, `\`):
		why = "has a backslash"
	case !utf8.ValidString(path):
		why = "has bytes that are not UTF-8"
	}
	if why == "" {
		return nil
	}
	return fmt.Errorf("st's path %q %s, which systemd does not run a program from; install st in a folder without it (scripts/install puts it in ~/.local/bin), then st up --at-login again", path, why)
}

// systemdWord is s as one double-quoted word of a unit: C escapes for
// the quote, the backslash and every control character, and % doubled.
func systemdWord(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '%':
			b.WriteString("%%")
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case plain.Control(r):
			for _, c := range []byte(string(r)) {
				fmt.Fprintf(&b, `\x%02x`, c)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// launchdPlist writes the agent's plist, each value XML-escaped (a line
// break and a tab stay as they are, a carriage return is &#13;, which an
// XML reader would otherwise turn into a line break). XML holds no other
// C0 control, nor bytes that are not UTF-8: those are refused.
func launchdPlist(p LoginPaths) ([]byte, error) {
	for _, e := range [][2]string{{"st's path", p.STBin}, {"ST_HOME", p.STHome}, {"PATH", p.Path}, {"the log's path", p.LogPath}} {
		if err := plistText(e[1]); err != nil {
			return nil, fmt.Errorf("%s %q cannot be written in a launchd plist: %v", e[0], e[1], err)
		}
	}
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
	return []byte(b.String()), nil
}

// plistText refuses what XML 1.0 cannot hold.
func plistText(s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("it has bytes that are not UTF-8")
	}
	for i, r := range s {
		if r < 0x20 && r != '\t' && r != '\n' && r != '\r' {
			return &plain.Error{Rune: r, Offset: i}
		}
	}
	return nil
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&apos;", "\r", "&#13;").Replace(s)
}
