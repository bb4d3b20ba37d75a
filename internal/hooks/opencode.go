package hooks

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/store"
)

// opencode has no command hooks: st hears it through a plugin, a file
// opencode loads from its config folder's plugin/ (every .js there, at
// its start), that runs "<st> hook opencode EVENT" with the payload on
// stdin for each event st listens to, and throws st's refusal of a tool
// call, which is how an opencode plugin refuses one (reference §12). The
// file is st's alone: st writes it whole, knows it by the stamp on its
// first line, and removes it (with its folder, when st made the folder)
// on uninstall. A file of that name without the stamp is the user's and
// is never touched.

// Opencode is the kind whose plugin this package writes.
const Opencode = "opencode"

// OpencodePluginName is the plugin file's name in the plugin folder.
const OpencodePluginName = "sophonz-st.js"

// opencodeStamp begins st's plugin file; the lines after it say which st
// it runs and whether st made the plugin folder.
const opencodeStamp = "// sophonz st: opencode plugin, written by st hooks install; st hooks uninstall removes it."

// opencodeFile is st's plugin file.
func (o Options) opencodeFile() string {
	return filepath.Join(o.OpencodeDir, "plugin", OpencodePluginName)
}

// editOpencode installs, removes or reports st's opencode plugin.
func (o Options) editOpencode(m mode) AgentReport {
	path := o.opencodeFile()
	events := agent.Opencode.EventNames()
	ar := AgentReport{Agent: Opencode, File: path, Total: len(events)}
	data, err := os.ReadFile(path)
	exists := err == nil
	switch {
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		ar.Error = fmt.Sprintf("cannot read %s: %v", path, unwrapPath(err))
		ar.Hint = "make " + path + " a file st can read and write, then run st hooks " + m.String() + " again"
		return ar
	case exists && !strings.HasPrefix(string(data), opencodeStamp):
		// The user's own file of that name: not st's to change.
		ar.Exists = true
		ar.Error = path + " is not st's plugin (it lacks st's first line), so st leaves it as it is"
		ar.Hint = "rename or move " + path + ", then run st hooks " + m.String() + " again"
		return ar
	}
	ar.Exists = exists
	made := exists && opencodeMadeFolder(data)
	switch m {
	case modeInstall:
		if !exists {
			_, err := os.Stat(filepath.Dir(path))
			made = errors.Is(err, fs.ErrNotExist)
		}
		want := OpencodePlugin(o.St, made)
		if string(data) != want {
			if err := store.WriteFile(path, []byte(want), 0o644); err != nil {
				ar.Error = fmt.Sprintf("cannot write %s: %v", path, unwrapPath(err))
				ar.Hint = "make " + filepath.Dir(path) + " writable, then run st hooks install again"
				return ar
			}
			ar.Changed, ar.Created, ar.Exists, data = true, !exists, true, []byte(want)
		}
	case modeUninstall:
		if exists {
			if err := os.Remove(path); err != nil {
				ar.Error = fmt.Sprintf("cannot remove %s: %v", path, unwrapPath(err))
				ar.Hint = "remove " + path + " yourself, then run st hooks uninstall again"
				return ar
			}
			ar.Changed, ar.Exists, data = true, false, nil
			if made {
				// The folder was st's making: gone again when st's file
				// was all there was in it.
				_ = os.Remove(filepath.Dir(path))
			}
		}
		ar.Restored = ar.Changed
	}
	opencodeStatus(&ar, data, events, o.St)
	return ar
}

// opencodeStatus fills in which st the plugin runs: every event is
// installed when the file is the one this st writes.
func opencodeStatus(ar *AgentReport, data []byte, events []string, st string) {
	ar.Hooks, ar.Missing, ar.Other, ar.Installed = nil, nil, nil, 0
	runs := opencodeRuns(data)
	current := data != nil && (string(data) == OpencodePlugin(st, false) || string(data) == OpencodePlugin(st, true))
	for _, ev := range events {
		hs := HookStatus{Event: ev, Installed: data != nil, Current: current, St: runs}
		if hs.Installed {
			hs.Command = Command(runs, Opencode, ev)
		}
		switch {
		case current:
			ar.Installed++
		case hs.Installed:
			ar.Other = append(ar.Other, ev)
		default:
			ar.Missing = append(ar.Missing, ev)
		}
		ar.Hooks = append(ar.Hooks, hs)
	}
}

var (
	opencodeStRE   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^const ST = ("(?:[^"\\]|\\.)*");$`) })
	opencodeMadeRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^// st made its folder: yes$`) })
)

// opencodeRuns is the st a plugin file of st's runs.
func opencodeRuns(data []byte) string {
	m := opencodeStRE().FindSubmatch(data)
	if m == nil {
		return ""
	}
	var s string
	if json.Unmarshal(m[1], &s) != nil {
		return ""
	}
	return s
}

func opencodeMadeFolder(data []byte) bool { return opencodeMadeRE().Match(data) }

// OpencodePlugin is st's plugin file for opencode, running st (an
// absolute path). madeFolder records that st made the plugin folder, so
// that uninstall takes it out again.
//
// What it hands st, as st's hook expects it (agent.mapOpencodeEvent):
// chat.message with the prompt's text; tool.execute.before and .after
// with the tool and its input (tool_input, where st's guard and --owns
// read a command); permission.asked, permission.replied; session.status
// (busy); session.error; session.idle once per turn with the turn's last
// text (opencode fires it twice after an Esc, and after an error that
// session.error already told), and none after an error. opencode fires no
// event when it exits: st learns of that from the pane.
func OpencodePlugin(st string, madeFolder bool) string {
	q, _ := json.Marshal(st)
	made := "no"
	if madeFolder {
		made = "yes"
	}
	return opencodeStamp + strings.NewReplacer("__ST__", string(q), "__MADE__", made, "__MARK__", agent.OpencodeOfflineMark).Replace(opencodePluginJS)
}

// opencodePluginJS is the plugin's text below its stamp, with __ST__ (st's
// path, a JSON string), __MADE__ and __MARK__ (the offline mark's name)
// for OpencodePlugin to fill in.
//
//go:embed opencode_plugin.js
var opencodePluginJS string
