
// It hands opencode's events to st ("st hook opencode EVENT", the event's
// payload on stdin), and refuses a tool call st refuses (st's guard, a
// worker's --owns) by throwing st's reason.
// st made its folder: __MADE__
import { spawnSync } from "node:child_process";

const ST = __ST__;

// st sets npm_config_offline for opencode's own start-up install only
// (its config folder lacked node_modules): the agent's commands get the
// person's npm back.
if (process.env.__MARK__ === "1") {
  delete process.env.npm_config_offline;
  delete process.env.__MARK__;
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
