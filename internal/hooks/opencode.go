package hooks

import (
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
	return opencodeStamp + `
// It hands opencode's events to st ("st hook opencode EVENT", the event's
// payload on stdin), and refuses a tool call st refuses (st's guard, a
// worker's --owns) by throwing st's reason.
// st made its folder: ` + made + `
import { spawnSync } from "node:child_process";

const ST = ` + string(q) + `;

// st sets npm_config_offline for opencode's own start-up install only
// (its config folder lacked node_modules): the agent's commands get the
// person's npm back.
if (process.env.` + agent.OpencodeOfflineMark + ` === "1") {
  delete process.env.npm_config_offline;
  delete process.env.` + agent.OpencodeOfflineMark + `;
}

export const SophonzSt = async (ctx) => {
  const cwd = ctx.directory;
  const turns = new Map();
  const turn = (id) => {
    let t = turns.get(id);
    if (!t) {
      t = { open: false, error: false, last: "" };
      turns.set(id, t);
    }
    return t;
  };
  const send = (event, sessionID, fields) => {
    const payload = JSON.stringify({ hook_event_name: event, session_id: sessionID || "", cwd, ...fields });
    try {
      const r = spawnSync(ST, ["hook", "opencode", event], { input: payload, encoding: "utf8", timeout: 10000 });
      return r.stdout || "";
    } catch {
      return "";
    }
  };
  return {
    "chat.message": async (input, output) => {
      const t = turn(input.sessionID);
      t.open = true;
      t.error = false;
      t.last = "";
      const prompt = (output.parts || []).filter((p) => p.type === "text" && !p.synthetic).map((p) => p.text).join("\n");
      send("chat.message", input.sessionID, { prompt });
    },
    "tool.execute.before": async (input, output) => {
      const out = send("tool.execute.before", input.sessionID, { tool_name: input.tool, tool_input: output.args || {} });
      let answer = null;
      try {
        answer = JSON.parse(out.trim() || "null");
      } catch {}
      if (answer && answer.decision === "deny") throw new Error(answer.reason || "st refused this call");
    },
    "tool.execute.after": async (input) => {
      send("tool.execute.after", input.sessionID, { tool_name: input.tool, tool_input: input.args || {} });
    },
    event: async ({ event }) => {
      const p = event.properties || {};
      switch (event.type) {
        case "message.part.updated": {
          const part = p.part || {};
          if (part.type === "text" && part.time && part.time.end && !part.synthetic) turn(part.sessionID).last = part.text;
          return;
        }
        case "permission.asked":
          send(event.type, p.sessionID, { tool_name: p.permission, tool_input: p.metadata || {} });
          return;
        case "permission.replied":
          send(event.type, p.sessionID, { reply: p.reply });
          return;
        case "session.status":
          if (p.status && p.status.type === "busy" && !turn(p.sessionID).open) {
            turn(p.sessionID).open = true;
            send(event.type, p.sessionID, { status: "busy" });
          }
          return;
        case "session.error":
          turn(p.sessionID).error = true;
          send(event.type, p.sessionID, { error: p.error || {} });
          return;
        case "session.idle": {
          const t = turn(p.sessionID);
          if (!t.open) return;
          t.open = false;
          if (!t.error) send(event.type, p.sessionID, { last_assistant_message: t.last });
          return;
        }
      }
    },
  };
};
`
}
