
// It hands opencode's events to st ("st hook opencode EVENT", the event's
// payload on stdin), and refuses a tool call st refuses (st's guard, a
// worker's --owns) by throwing st's reason.
// st made its folder: __MADE__
import { spawnSync } from "node:child_process";
import { appendFileSync, mkdirSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

const ST = __ST__;

// st sets npm_config_offline for opencode's own start-up install only
// (its config folder lacked node_modules): the agent's commands get the
// person's npm back.
if (process.env.__MARK__ === "1") {
  delete process.env.npm_config_offline;
  delete process.env.__MARK__;
}

// What opencode spent: its database (opencode.db, SQLite) holds each
// assistant message's tokens, and st does not link SQLite into every st
// process (each hook is one). opencode hands the same numbers to plugins
// in message.updated: this plugin writes each finished assistant
// message's tokens, one JSON line, into a file of the session's own,
// which st reads from where it stopped, as it reads Claude's transcript.
const dataDir = process.env.XDG_DATA_HOME ? join(process.env.XDG_DATA_HOME, "opencode") : join(homedir(), ".local", "share", "opencode");
const tokenDir = join(dataDir, "st-tokens");
const sessionRE = /^ses_[0-9A-Za-z]{8,64}$/;
const tokenFile = (sessionID) => (sessionRE.test(sessionID || "") ? join(tokenDir, sessionID + ".jsonl") : "");

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
  const written = new Map(); // message id -> the tokens line written last
  const recordTokens = (info) => {
    const file = tokenFile(info.sessionID);
    if (!file || info.role !== "assistant" || !info.tokens || !info.time || !info.time.completed) return;
    const line = JSON.stringify({ id: info.id, model: info.modelID || "", provider: info.providerID || "", tokens: info.tokens });
    if (written.get(info.id) === line) return;
    try {
      mkdirSync(tokenDir, { recursive: true, mode: 0o700 });
      appendFileSync(file, line + "\n", { mode: 0o600 });
      written.set(info.id, line);
    } catch {}
  };
  const send = (event, sessionID, fields) => {
    const transcript_path = tokenFile(sessionID);
    const payload = JSON.stringify({ hook_event_name: event, session_id: sessionID || "", cwd, transcript_path, ...fields });
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
        case "message.updated":
          recordTokens(p.info || {});
          return;
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
