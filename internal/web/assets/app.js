// st's web UI: the sidebar of sessions and windows with the agents'
// shared cards, the web terminal, the Agents card, the agent graph, the
// phone's Agents chart and the decision gates. Under each agent it shows
// the teammates of the Claude agent team it leads (blue lines) and its
// subagents (thin grey lines): st only watches those. The server sends the
// whole snapshot, then what changed (/api/events; applyPatch), and the
// page is drawn again from it, so it never drifts from st's state; what the person opened or
// folded is kept here, apart from the snapshot. With many agents only
// what changed reaches the screen: a drawing keeps every element that is
// the same as before (patch; the graph's cards by key, GC), and
// snapshots that come faster than frames are drawn once a frame.
import { Terminal } from './vendor/xterm.mjs';
import { FitAddon } from './vendor/addon-fit.mjs';
import { t, fmtDur, fmtShort, fmtTime, fmtCount, fmtUSD, translatePage } from './i18n.js';

const $ = (sel) => document.querySelector(sel);

// el('div.card.family', {title: 'x'}, child, 'text', ...)
function el(spec, attrs, ...kids) {
  const [tag, ...classes] = spec.split('.');
  const e = document.createElement(tag || 'div');
  if (classes.length) e.className = classes.join(' ');
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'on') for (const [ev, f] of Object.entries(v)) listen(e, ev, f);
      else if (k === 'dataset') { for (const [dk, dv] of Object.entries(v)) if (dv !== undefined) e.dataset[dk] = dv; }
      else if (k === 'text') e.textContent = v;
      else e.setAttribute(k, v === true ? '' : v);
    }
  }
  for (const k of kids.flat()) if (k !== null && k !== undefined && k !== false) e.append(k);
  return e;
}

// LISTENED are the elements drawn with a listener of their own (listen).
// patch never keeps one of them in place of a new one that differs: its
// listener was made for what the old one showed.
const LISTENED = new WeakSet();

function listen(node, ev, f, opts) {
  LISTENED.add(node);
  node.addEventListener(ev, f, opts);
}

// sameShell: a and b are the same element with the same attributes,
// whatever their children, and neither has a listener of its own.
function sameShell(a, b) {
  if (a.nodeType !== 1 || b.nodeType !== 1 || a.tagName !== b.tagName || LISTENED.has(a) || LISTENED.has(b)) return false;
  if (a.attributes.length !== b.attributes.length) return false;
  for (const at of a.attributes) if (b.getAttribute(at.name) !== at.value) return false;
  return true;
}

// patch makes the children of live what want's children are, keeping
// each one that is already the same (isEqualNode), so that the browser
// lays out and paints again only what changed: with many agents, a
// snapshot changes a few rows of many. want's children move into live.
// A kept element keeps its listeners, so these find what they act on
// when they run (agentNow), never by what they held when drawn, and
// what they act on is in the element's attributes or an ancestor's (the
// keys: data-agent, data-key, data-family, data-session, data-window,
// data-gate, data-mate): a listener is never kept under another key.
function patch(live, want) {
  let cur = live.firstChild;
  for (const n of [...want.childNodes]) {
    if (!cur) { live.append(n); continue; }
    if (cur.isEqualNode(n)) { cur = cur.nextSibling; continue; }
    if (sameShell(cur, n)) { patch(cur, n); cur = cur.nextSibling; continue; }
    live.replaceChild(n, cur);
    cur = n.nextSibling;
  }
  while (cur) { const next = cur.nextSibling; cur.remove(); cur = next; }
}

// Icons drawn here, so that no font has to have the glyph.
const ICONS = {
  bell: '<svg viewBox="0 0 16 16" fill="none" stroke="currentColor" stroke-width="1.5" stroke-linejoin="round"><path d="M4 11V7a4 4 0 0 1 8 0v4l1.5 1.5h-11z"/><path d="M6.5 14a1.6 1.6 0 0 0 3 0"/></svg>',
  fork: '<svg viewBox="0 0 16 16" fill="none" stroke="currentColor" stroke-width="1.5"><circle cx="4" cy="3.2" r="1.7"/><circle cx="12" cy="3.2" r="1.7"/><circle cx="8" cy="12.8" r="1.7"/><path d="M4 5v1a3 3 0 0 0 3 3h2a3 3 0 0 0 3-3V5M8 9v2"/></svg>',
};

function icon(name) {
  const e = el('span.icon', { 'aria-hidden': 'true' });
  e.innerHTML = ICONS[name];
  return e;
}

// ---- State --------------------------------------------------------------

const S = {
  snap: null,
  m: null,              // the model built from snap
  offset: 0,            // server clock minus ours, in ms
  open: null,           // {session, window}: the terminal shown
  ro: false,
  graphOpen: false,
  graphHome: false,     // the graph is open as the first screen
  homeShown: false,     // the first screen was chosen
  scope: 'machine',     // phone chart: session | machine | all
  closed: {},           // folds the person closed (sessions, worker lists, the Agents card)
  completedOpen: {},    // Completed (N) groups the person opened
  menu: null,           // the key of the sidebar row whose menu is open
  seenGates: null,      // gate ids already notified
  seenNeeds: null,      // attention item ids already notified
  askNotify: false,     // the Needs you list asks, once, to notify
  drag: null,           // the drag under way; snapshots wait for its end
  pressed: 0,           // when a pointer went down; snapshots wait for its click
  pending: false,
};

const phone = window.matchMedia('(max-width: 700px)');
const serverNow = () => Date.now() + S.offset;

// ---- Model --------------------------------------------------------------

const STATE_ORDER = ['working', 'waiting', 'blocked', 'paused', 'starting', 'idle', 'done', 'failed', 'gone', 'unreachable'];

function isLocal(machine) { return !machine || (S.snap && machine === S.snap.machine); }

// The account's machines by slug (when this machine is signed in).
function machineOf(slug) { return ((S.snap && S.snap.machines) || []).find((m) => m.slug === slug); }
function machineName(slug) { const m = machineOf(slug); return m ? m.name : slug; }
// An agent on a machine that is offline is shown dimmed.
function offline(a) { const m = !isLocal(a.machine) && machineOf(a.machine); return !!m && !m.online; }
function machineTag(a) {
  return el('span.machine', { text: t(offline(a) ? 'machine.tagOffline' : 'machine.tag', { name: machineName(a.machine) }) });
}

// An agent's key is st's worker id: %7 here, machine/%7 elsewhere.
function keyOf(a) { return isLocal(a.machine) ? a.pane : `${a.machine}/${a.pane}`; }

// agentNow is the agent as the newest snapshot has it: what a click acts
// on (the row clicked may have been drawn from an older one).
function agentNow(a) { return (S.m && S.m.byKey.get(keyOf(a))) || a; }

// A pane of a tmux server that went is named by its retired id, with the
// mark of that restart (%3~k9x): today's %3 is another pane, so the page
// never shows a gone pane by a live one's id.

function parentKeyOf(a) {
  if (!a.parent) return '';
  const i = a.parent.indexOf('/');
  if (i < 0) return a.parent;
  return isLocal(a.parent.slice(0, i)) ? a.parent.slice(i + 1) : a.parent;
}

function buildModel(snap) {
  const byKey = new Map();
  for (const a of snap.agents) byKey.set(keyOf(a), a);
  const kids = new Map();
  const parentOf = new Map();
  for (const a of snap.agents) {
    const pk = parentKeyOf(a);
    if (!pk || a.parentGone || !byKey.has(pk)) continue;
    if (!kids.has(pk)) kids.set(pk, []);
    kids.get(pk).push(a);
    parentOf.set(keyOf(a), byKey.get(pk));
  }
  const children = (a) => kids.get(keyOf(a)) || [];
  // A coordinator on another machine that this page does not show (that
  // machine offline, or this one not signed in) is not thereby gone.
  // (A worker started from a shell has no line to it, and is no orphan.)
  const orphan = (a) => { const pk = parentKeyOf(a); return !!pk && !a.parentShell && !parentOf.has(keyOf(a)) && (!pk.includes('/') || !!a.parentGone); };
  const roots = snap.agents.filter((a) => !parentOf.has(keyOf(a)));
  const rootOf = (a) => { let r = a; while (parentOf.has(keyOf(r))) r = parentOf.get(keyOf(r)); return r; };
  const gatesOf = new Map();
  for (const g of snap.gates) {
    if (!gatesOf.has(g.pane)) gatesOf.set(g.pane, []);
    gatesOf.get(g.pane).push(g);
  }
  // The open attention items by their agent's key (the newest of each).
  const needsOf = new Map();
  for (const n of [...(snap.attention || [])].reverse()) needsOf.set(isLocal(n.machine) ? n.pane : `${n.machine}/${n.pane}`, n);
  const sessionName = new Map(snap.sessions.map((s) => [s.id, s.name]));
  const windowOf = new Map();
  for (const s of snap.sessions) for (const w of s.windows) windowOf.set(w.id, { session: s, window: w });
  // This machine's agents by window, in the snapshot's order.
  const agentsIn = new Map();
  for (const a of snap.agents) {
    if (!isLocal(a.machine)) continue;
    if (!agentsIn.has(a.window)) agentsIn.set(a.window, []);
    agentsIn.get(a.window).push(a);
  }
  const others = snap.agents.some((a) => !isLocal(a.machine)) || (snap.machines || []).length > 1;
  // Where each of this machine's panes is: a shell that started workers
  // has no agent, but its window is where they belong here.
  const paneAt = new Map();
  for (const s of snap.sessions) for (const w of s.windows) for (const p of w.panes || []) paneAt.set(p.id, { session: s.id, window: w.id });
  // Workers started from a shell of this machine (here or on another
  // machine), by the shell's pane: no line goes from a shell, but they
  // belong to this machine's tree, at the shell's window.
  const shellKids = new Map();
  for (const a of roots) {
    const pk = parentKeyOf(a);
    if (!a.parentShell || !pk || pk.includes('/') || !paneAt.has(pk)) continue;
    if (!shellKids.has(pk)) shellKids.set(pk, []);
    shellKids.get(pk).push(a);
  }
  const model = { byKey, children, orphan, roots, rootOf, parentOf, gatesOf, needsOf, sessionName, windowOf, agentsIn, others, paneAt, shellKids };
  model.homeOf = homeOf.bind(null, model, new Map());
  return model;
}

// homeOf is the one selection of who belongs where (issue 32): the place
// on this machine ({session, window}) of the tree an agent is in, or null
// for a tree wholly on other machines. A tree is at its top agent's
// window; a top on another machine is at the shell of this machine that
// started it (shellKids), or at its first member here. The chart's This
// session and This machine draw the trees it places; the sidebar draws
// each at the same window (a family's card at its top agent's, a shell's
// workers at the shell's); the Agents card draws the tree of the agent on
// screen; the graph, like All machines, draws every tree. So a worker of
// this machine's tree shows in every view.
function homeOf(m, memo, a) {
  const top = m.rootOf(a);
  const k = keyOf(top);
  if (memo.has(k)) return memo.get(k);
  let h = null;
  if (isLocal(top.machine)) h = { session: top.session, window: top.window };
  else if (top.parentShell && m.paneAt.has(parentKeyOf(top))) h = m.paneAt.get(parentKeyOf(top));
  else {
    const walk = (x) => {
      for (const c of m.children(x)) {
        if (isLocal(c.machine)) return { session: c.session, window: c.window };
        const f = walk(c);
        if (f) return f;
      }
      return null;
    };
    h = walk(top);
  }
  memo.set(k, h);
  return h;
}

// mayRelease: this page may let a go, as st's authorization model
// decided for it (Agent.Release): a worker of this machine's records. A
// machine that is not a worker's coordinator shows it and offers nothing
// it could not do (st would refuse it there anyway).
function mayRelease(a) { return !!a.release; }

// The teammates of the Claude agent team an agent leads, and its subagents.
const mates = (a) => a.teammates || [];
const subs = (a) => a.subagents || [];

// Does a agent take part in delegation: hand work out, take it, lead a
// Claude agent team, or run subagents?
function delegates(a) {
  return S.m.children(a).length > 0 || !!parentKeyOf(a) || mates(a).length > 0 || subs(a).length > 0;
}

// A team lead is a coordinator that was adopted with workers of its own
// (st counts its team: teamOf). A worker that starts workers is still a
// worker: nothing makes a team but an adoption (spec, Team), and its
// workers hang under it as workers of a worker.
function roleLabel(a) {
  if (a.teamOf) return t('role.lead');
  if (a.role === 'worker' || parentKeyOf(a)) return t('role.worker');
  if (a.role === 'coordinator' || S.m.children(a).length) return t('role.coordinator');
  if (mates(a).length) return t('role.lead'); // of a Claude agent team
  return t('role.agent');
}

function matesText(a) {
  const n = mates(a).length;
  return n ? el('span.mates-of', { text: t('mates.count', { n }) }) : null;
}

function teamSize(a) { return a.teamOf || 0; }

function countText(list) {
  const n = {};
  for (const a of list) { const st = a.state || 'idle'; n[st] = (n[st] || 0) + 1; }
  const keys = Object.keys(n).sort((x, y) => STATE_ORDER.indexOf(x) - STATE_ORDER.indexOf(y));
  return keys.map((k) => t('state.count', { n: n[k], state: stateName(k) })).join(t('list.sep'));
}

// stateName is a state as the page's language says it.
function stateName(state) { return state ? t(`state.${state}`) : '—'; }

function since(t, short) {
  if (!t || t.startsWith('0001-')) return null;
  const f = short ? fmtShort : fmtDur;
  return el('span.since', { dataset: { since: t, short: short ? '1' : undefined }, text: f(serverNow() - Date.parse(t)) });
}

function tickDurations() {
  for (const e of document.querySelectorAll('[data-since]')) {
    const f = e.dataset.short ? fmtShort : fmtDur;
    const v = f(serverNow() - Date.parse(e.dataset.since));
    // Most stay the same from one second to the next (3m): a write
    // would lay them out again for nothing.
    if (e.textContent !== v) e.textContent = v;
  }
}

function dot(state) {
  return el('span.dot', { class: `dot st-${state || 'none'}${state === 'working' ? ' pulse' : ''}`, title: state ? stateName(state) : '' });
}

// An agent's kind is the name of its program (claude, codex, sim).
// Kinds come from st's descriptions of them (the snapshot's kinds: each
// one's name and icon); what a person reads of one (its title) comes from
// the catalogue, in the page's language, else its name.
function kindOf(kind) { return ((S.snap && S.snap.kinds) || []).find((k) => k.name === kind); }
function kindTitle(kind) {
  if (!kind) return t('role.agent');
  const title = t(`kind.${kind}`);
  if (title !== `kind.${kind}`) return title;
  // A kind the user described in config.toml: its own title.
  const k = kindOf(kind);
  return (k && k.title) || kind;
}
function kindIcon(kind) {
  const k = kindOf(kind);
  return el('span.kind', { class: `kind k-${kind || 'other'}`, title: kindTitle(kind), text: (k && k.icon) || '●' });
}

function stateText(a, short) {
  // A worker paused at its usage limit says until when (issue 35).
  const resets = a.state === 'paused' && a.resets && !a.resets.startsWith('0001-') ? Date.parse(a.resets) : null;
  return el('span.state', { title: a.state ? t('state.since', { state: stateName(a.state), time: fmtTime(a.since) }) : undefined },
    el('span.st-word', { text: resets ? t(a.goesOn === 'move' ? 'state.pausedMoved' : 'state.pausedUntil', { time: fmtTime(resets) }) : stateName(a.state) }),
    // (A worker's machine says so: its kind may be described only there.)
    a.state && (a.screen || (kindOf(a.kind) || {}).screen)
      ? el('span.st-screen', { text: ' ' + t('state.fromScreen'), title: t('state.fromScreenTitle') }) : null,
    a.state ? el('span.st-time', null, el('span.sep', { text: ' · ' }), since(a.since, short)) : null);
}

// tokensMark is what a worker's agent spent (st's token ledger, issue
// 35): its total in short units, with its cost when one is known (the
// agent's own figure as it is, st's estimate with a ~); every kind, and
// whose the cost is, in its title.
function tokensMark(a) {
  const k = a.tokens;
  if (!k) return null;
  const n = fmtCount(k.total);
  const byAgent = k.cost_usd != null && !k.cost_estimated;
  let title = t('tokens.title', { total: k.total, input: k.input, output: k.output, cacheRead: k.cache_read, cacheWrite: k.cache_write, reasoning: k.reasoning });
  if (k.cost_usd != null) title += ' · ' + (byAgent ? t('tokens.byAgent') : t('tokens.estimate', { date: k.price_date }));
  const text = k.cost_usd == null ? t('tokens.count', { n })
    : t(byAgent ? 'tokens.agentCost' : 'tokens.cost', { n, cost: fmtUSD(k.cost_usd) });
  return el('span.tokens.muted.small', { title, text, dataset: { cost: k.cost_usd == null ? undefined : byAgent ? 'agent' : 'estimate' } });
}

function isOpen(a) {
  if (!S.open) return false;
  if (S.open.machine) return a.machine === S.open.machine && a.pane === S.open.pane;
  return isLocal(a.machine) && S.open.window === a.window;
}

// Why the window of another machine's agent cannot open from here, or ''.
// That machine decides in the end (it checks again, and says why).
function cannotOpen(a) {
  if (isLocal(a.machine)) return '';
  const m = machineOf(a.machine);
  const name = machineName(a.machine);
  if (!m || !m.online) return t('open.offline', { name });
  if (!m.accepts) return t('open.noAccept', { name });
  return '';
}

// ---- The session ----------------------------------------------------------

// The page proves to st that it is the user's with its session, which the
// page that st web's link opened got from st (in a <meta>). It lives in
// this origin's localStorage (scheme, host and port: no page of another
// port can read it), so a reload and a second tab of this address keep
// working, and the page sends it itself: a bearer header on fetches, a
// subprotocol on websockets (the only header a page may set there). The
// browser never sends it on its own, as it would a cookie, to every port.
const SESSION_KEY = 'st-session';

function storedSession() {
  try { return localStorage.getItem(SESSION_KEY) || ''; } catch { return ''; }
}

let session = (() => {
  const m = document.querySelector('meta[name="st-session"]');
  if (m && m.content) {
    try { localStorage.setItem(SESSION_KEY, m.content); } catch { /* private mode: this page only */ }
    return m.content;
  }
  return storedSession();
})();

// stApi fetches one of st's routes with the session.
function stApi(path, init = {}) {
  const headers = { ...(init.headers || {}) };
  if (session) headers.Authorization = `Bearer ${session}`;
  return fetch(path, { ...init, headers, cache: 'no-store' });
}

// stSocket opens one of st's websockets with the session.
function stSocket(url) {
  return new WebSocket(url, session ? ['st', `st-session.${session}`] : ['st']);
}

// ---- Actions ------------------------------------------------------------

async function post(path, body) {
  try {
    const r = await stApi(path, {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
    });
    const j = await r.json().catch(() => ({}));
    // st's refusals are in English, as st wrote them.
    if (!r.ok) { toast(t('toast.stSays', { why: j.error || `${r.status} ${r.statusText}` }), true); return false; }
    return true;
  } catch (e) {
    toast(t('toast.noAnswer', { why: e.message }), true);
    return false;
  }
}

function answerGate(g, option, btn) {
  for (const b of document.querySelectorAll(`[data-gate="${CSS.escape(g.id)}"] button`)) b.disabled = true;
  post('api/gates/answer', { id: g.id, option }).then((ok) => {
    if (ok) toast(t('toast.answered', { option }));
    else for (const b of document.querySelectorAll(`[data-gate="${CSS.escape(g.id)}"] button`)) b.disabled = false;
  });
}

function release(a) {
  post('api/release', { pane: keyOf(a) }).then((ok) => ok && toast(t('toast.released', { name: a.name })));
}

// nameOf is what the page calls the agent of a key: its name, or for a
// teammate in a pane (which may be dropped on a coordinator) the name
// Claude gave it; the pane only when it has neither.
function nameOf(key) {
  const a = S.m.byKey.get(key);
  if (a) return a.name || key;
  for (const lead of S.snap.agents) for (const tm of mates(lead)) if (isLocal(lead.machine) && tm.pane === key && tm.name) return tm.name;
  return key;
}

function adopt(coordinator, agent) {
  const names = { lead: nameOf(coordinator), name: nameOf(agent) };
  toast(t('toast.adopting', names));
  post('api/adopt', { coordinator, agent }).then((ok) => ok && toast(t('toast.adopted', names)));
}

function openAgent(a) {
  if (!isLocal(a.machine)) {
    const why = cannotOpen(a);
    if (why) { toast(why, true); return; }
    openRemote(a.machine, a.pane);
    return;
  }
  openWindow(a.session, a.window);
}

let toastTimer;
function toast(msg, bad) {
  const t = $('#toast');
  t.textContent = msg;
  t.classList.toggle('bad', !!bad);
  t.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { t.hidden = true; }, bad ? 6000 : 3000);
}

// ---- Drag to adopt --------------------------------------------------------
// Pointer events rather than HTML drag and drop: the same code serves a
// mouse and a finger, and a card keeps its click.

// The click that a drag's release makes is no click on a card: a press
// that became a drag makes no click, and the next press starts afresh.
// (Not a timer: a browser slows the timers of a page it does not show,
// and a quick hand clicks again at once.)
let dragged = false;
document.addEventListener('pointerdown', () => { dragged = false; }, true);

function draggable(node, key) {
  node.dataset.agent = key;
  listen(node, 'pointerdown', (e) => {
    if (e.button !== 0 || e.target.closest('button, summary, a')) return;
    const x0 = e.clientX, y0 = e.clientY;
    let ghost = null;
    const target = (x, y) => {
      const t = document.elementFromPoint(x, y);
      const d = t && t.closest('[data-agent]');
      // A teammate may be dropped on a coordinator, never be one.
      return d && d.dataset.agent !== key && d.dataset.drop !== 'no' ? d : null;
    };
    let over = null;
    const move = (ev) => {
      if (!ghost) {
        if (Math.hypot(ev.clientX - x0, ev.clientY - y0) < 6) return;
        ghost = node.cloneNode(true);
        ghost.classList.add('drag-ghost');
        ghost.style.width = `${node.offsetWidth}px`;
        document.body.append(ghost);
        node.classList.add('dragging');
        S.drag = key;
        dragged = true;
      }
      ghost.style.left = `${ev.clientX + 10}px`;
      ghost.style.top = `${ev.clientY + 10}px`;
      const t = target(ev.clientX, ev.clientY);
      if (t !== over) { over && over.classList.remove('drop-over'); over = t; over && over.classList.add('drop-over'); }
    };
    const end = (ev, drop) => {
      window.removeEventListener('pointermove', move);
      window.removeEventListener('pointerup', up);
      window.removeEventListener('pointercancel', cancel);
      if (!ghost) return;
      ghost.remove();
      node.classList.remove('dragging');
      over && over.classList.remove('drop-over');
      S.drag = null;
      const t = drop && target(ev.clientX, ev.clientY);
      if (t) adopt(t.dataset.agent, key);
      if (S.pending) { S.pending = false; render(); }
    };
    const up = (ev) => end(ev, true);
    const cancel = (ev) => end(ev, false);
    window.addEventListener('pointermove', move);
    window.addEventListener('pointerup', up);
    window.addEventListener('pointercancel', cancel);
  });
}

function clickable(node, f) {
  listen(node, 'click', (e) => {
    if (dragged || e.target.closest('button, summary, details > .gate-row')) return;
    f(e);
  });
}

// ---- Gates --------------------------------------------------------------

function gateBox(g, withAsker) {
  const asker = S.m.byKey.get(g.pane);
  return el('div.gate', { dataset: { gate: g.id } },
    el('div.gate-q', null,
      el('span.gate-icon', { text: '?' }),
      withAsker ? el('b', { text: t('gate.asks', { name: asker ? asker.name : g.pane }) }) : null,
      el('span', { text: g.question }),
      el('span.muted', null, ' · ', since(g.asked))),
    el('div.gate-opts', null, g.options.map((o) =>
      el('button.opt', { type: 'button', text: o, on: { click: (e) => { e.stopPropagation(); answerGate(g, o, e.target); } } })),
      g.value ? gateAmount(g) : null));
}

// gateAmount is the field of a gate's option that takes an amount (a
// run's budget gate: go on with a budget the person types). st checks
// the amount; a refusal comes back as the toast of any failed answer.
function gateAmount(g) {
  return el('span.gate-amount', null,
    el('input.amount', { type: 'text', size: 8, placeholder: t('gate.amount'), 'aria-label': t('gate.amount'),
      on: { click: (e) => e.stopPropagation() } }),
    el('button.opt.set-amount', { type: 'button', text: t('gate.setAmount'), on: { click: (e) => {
      e.stopPropagation();
      const v = e.target.closest('.gate-amount').querySelector('input.amount').value.trim();
      if (v) answerGate(g, g.value.prefix + v, e.target);
    } } }));
}

// ---- Permission prompts ------------------------------------------------
// An agent's own permission dialog that st answers through its waiting
// hook (docs/permission-prompts.md): Allow once / Deny for a tool call, a
// question's options (and Deny) for Claude's AskUserQuestion. The dialog
// stays in the agent's window meanwhile: Open goes there.

function answerPrompt(p, option, label) {
  const sel = `[data-prompt="${CSS.escape(p.id)}"] button.opt`;
  for (const b of document.querySelectorAll(sel)) b.disabled = true;
  post('api/prompts/answer', { id: p.id, option }).then((ok) => {
    if (ok) toast(t('toast.answered', { option: label }));
    else for (const b of document.querySelectorAll(sel)) b.disabled = false;
  });
}

// promptAnswers are a prompt's buttons: Allow once / Deny, or a
// question's options and Deny.
function promptAnswers(p) {
  const opt = (option, label) => el('button.opt', { type: 'button', text: label, dataset: { option },
    on: { click: (e) => { e.stopPropagation(); answerPrompt(p, option, label); } } });
  return el('span.gate-opts', null, p.question
    ? [...p.options.map((o) => opt(o, o)), opt('deny', t('prompt.deny'))]
    : [opt('allow', t('prompt.allow')), opt('deny', t('prompt.deny'))]);
}

// promptBox is a prompt with no attention item (the Needs you list
// shows the others, with their answers).
function promptBox(p) {
  const a = S.m.byKey.get(p.pane);
  const name = a ? a.name : p.pane;
  return el('div.gate.prompt', { dataset: { prompt: p.id } },
    el('div.gate-q', null,
      el('span.gate-icon', { text: '!' }),
      el('b', { text: p.question ? t('prompt.asks', { name }) : t('prompt.wants', { name, tool: p.tool }) }),
      el('code.prompt-what', { text: p.question || p.command || p.tool }),
      el('span.muted', null, ' · ', since(p.opened))),
    el('div.gate-opts', null, promptAnswers(p),
      a ? el('button.opt.ghost', { type: 'button', text: t('prompt.open'), title: t('prompt.openTitle'),
        on: { click: (e) => { e.stopPropagation(); openAgent(a); } } }) : null));
}

function renderGates() {
  const box = $('#gates');
  const listed = new Set((S.snap.attention || []).filter((n) => isLocal(n.machine)).map((n) => n.pane));
  const prompts = (S.snap.prompts || []).filter((p) => !listed.has(p.pane));
  patch(box, el('div', null, prompts.map(promptBox), S.snap.gates.map((g) => gateBox(g, true))));
  box.hidden = S.snap.gates.length === 0 && prompts.length === 0;
}

function notifyGates() {
  const ids = new Set(S.snap.gates.map((g) => g.id));
  if (S.seenGates === null) { S.seenGates = ids; return; } // those open at load are on screen
  for (const g of S.snap.gates) {
    if (S.seenGates.has(g.id)) continue;
    S.seenGates.add(g.id);
    if (!('Notification' in window) || Notification.permission !== 'granted') continue;
    const a = S.m.byKey.get(g.pane);
    try {
      const n = new Notification(t('notify.asks', { name: a ? a.name : t('notify.someone') }), {
        body: `${g.question}\n${g.options.join(' · ')}`, tag: `st-gate-${g.id}`,
      });
      n.onclick = () => { window.focus(); n.close(); };
    } catch { /* some browsers allow notifications only from a service worker */ }
  }
}

// ---- Needs you ------------------------------------------------------------
// The attention items (issue 34): the agents that need a person, the
// newest first, each with its age; the page's title counts them; a new
// one notifies while the page is hidden (asked once, with the reason).

// The page's own title (index.html's), shown when no one needs you.
const pageTitle = document.title;

function needsMark(a) {
  return S.m.needsOf.has(keyOf(a)) ? el('span.needs-mark', { title: t('attn.mark'), text: '!' }) : null;
}

function dismissItem(n) {
  post('api/attention/dismiss', { id: n.id }).then((ok) => ok && toast(t('toast.dismissed')));
}

// promptOf is the open permission prompt st can answer for item n (its
// agent's hook waits: docs/permission-prompts.md), if any.
function promptOf(n) {
  if (!isLocal(n.machine) || (n.kind !== 'permission' && n.kind !== 'question')) return undefined;
  return (S.snap.prompts || []).find((p) => p.pane === n.pane);
}

function needRow(n) {
  // Another machine's worker opens through the peer link by its machine
  // and pane, whether or not that machine's graph reached this page.
  const a = S.m.byKey.get(isLocal(n.machine) ? n.pane : `${n.machine}/${n.pane}`)
    || (isLocal(n.machine) ? undefined : { machine: n.machine, pane: n.pane });
  const name = n.name || (a && a.name) || n.pane;
  const p = promptOf(n);
  // A prompt st can answer gets its answers here; one it cannot (an
  // agent whose hook cannot answer, or past st's wait) is answered in
  // the agent's window, which Open opens: st types nothing into it.
  const answers = p ? promptAnswers(p)
    : (n.kind === 'permission' || n.kind === 'question') ? el('span.muted.in-window', { text: t('prompt.inWindow') }) : null;
  return el('div.need', { dataset: { attention: n.id, kind: n.kind, prompt: p ? p.id : undefined } },
    el('span.needs-mark', { text: '!' }),
    el('b', { text: t(`attn.${n.kind}`, { name }) }),
    // Another machine's worker: its machine pushed it; here it is one
    // click from its window there (Open).
    isLocal(n.machine) ? null : machineTag(n),
    n.command || n.text ? el('span.need-text', { text: n.command || n.text }) : null,
    n.options && n.options.length ? el('span.muted', { text: n.options.join(' · ') }) : null,
    el('span.muted', null, since(n.opened)),
    answers,
    a && !cannotOpen(a) ? el('button.small-btn.open', { type: 'button', text: t('attn.open'), title: t('attn.openTitle'),
      on: { click: (e) => { e.stopPropagation(); openAgent(agentNow(a)); } } }) : null,
    // A gate's item closes with its answer (the banner's buttons).
    n.kind === 'gate' ? null : el('button.small-btn.dismiss', { type: 'button', text: t('attn.dismiss'), title: t('attn.dismissTitle'),
      on: { click: (e) => { e.stopPropagation(); dismissItem(n); } } }));
}

function renderNeeds() {
  const items = S.snap.attention || [];
  const box = $('#needs');
  patch(box, el('div', null,
    items.length ? el('div.needs-head', { text: t('attn.title', { n: items.length }) }) : null,
    S.askNotify ? el('div.need-ask', null, el('span', { text: t('attn.askWhy') }),
      el('button.small-btn.allow', { type: 'button', text: t('attn.askAllow'), on: { click: () => askedNotify(true) } }),
      el('button.small-btn', { type: 'button', text: t('attn.askLater'), on: { click: () => askedNotify(false) } })) : null,
    items.map(needRow)));
  box.hidden = items.length === 0 && !S.askNotify;
  document.title = items.length ? t('attn.pageTitle', { n: items.length }) : pageTitle;
}

// ---- Near a limit -----------------------------------------------------------
// The agents' accounts near a usage limit (issue 35), as the agents said
// it (Claude's status line, Codex's rollout): one line each, under Needs
// you.

// limitWindow is a limit's window ("5-hour", "7-day") in the page's
// language.
function limitWindow(w) {
  const m = /^(\d+)-(hour|day|minute)$/.exec(w || '');
  return m ? t(`limits.${m[2]}s`, { n: Number(m[1]) }) : w;
}

// limitRow is one account's line: the agent kind with the account as
// the agent's own files name it (two logins of one kind are two lines).
function limitRow(l) {
  const agent = l.account ? t('limits.agentAccount', { agent: l.agent, account: l.account }) : l.agent;
  const args = { agent, window: limitWindow(l.window), pct: Math.round(l.used_percent) };
  const resets = l.resets ? new Date(l.resets) : null;
  const text = resets ? t('limits.near', { ...args, resets: resets.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' }) })
    : t('limits.nearNoReset', args);
  return el('div.near-limit', { dataset: { agent: l.agent, account: l.account || '', window: l.window }, title: t('limits.title') }, el('b', { text }));
}

function renderLimits() {
  const items = (S.snap.limits || []).filter((l) => l.near);
  const box = $('#limits');
  patch(box, el('div', null, items.map(limitRow)));
  box.hidden = items.length === 0;
}

// askedNotify is the person's answer to the Needs you list's one ask.
function askedNotify(allow) {
  S.askNotify = false;
  try { localStorage.setItem('st.notifyAsked', '1'); } catch { /* private mode */ }
  if (allow) Promise.resolve(Notification.requestPermission()).then(() => { setupNotify(); render(); }, render);
  else render();
}

function notifyNeeds() {
  const items = S.snap.attention || [];
  if (S.seenNeeds === null) { S.seenNeeds = new Set(items.map((n) => n.id)); return; } // on screen at load
  const fresh = items.filter((n) => !S.seenNeeds.has(n.id));
  for (const n of fresh) S.seenNeeds.add(n.id);
  if (!fresh.length || !('Notification' in window)) return;
  let asked = false;
  try { asked = localStorage.getItem('st.notifyAsked') === '1'; } catch { /* private mode */ }
  if (Notification.permission === 'default' && !asked) S.askNotify = true;
  if (Notification.permission !== 'granted' || !document.hidden) return;
  for (const n of fresh) {
    if (n.kind === 'gate') continue; // notifyGates has it, with its options
    const a = S.m.byKey.get(isLocal(n.machine) ? n.pane : `${n.machine}/${n.pane}`);
    try {
      const note = new Notification(t(`attn.${n.kind}`, { name: n.name || (a && a.name) || n.pane }), {
        body: n.command || n.text || '', tag: `st-attn-${n.id}`,
      });
      note.onclick = () => { window.focus(); if (a) openAgent(agentNow(a)); note.close(); };
    } catch { /* some browsers allow notifications only from a service worker */ }
  }
}

function setupNotify() {
  const b = $('#notify-btn');
  b.replaceChildren(icon('bell'));
  if (!('Notification' in window)) { b.hidden = true; return; }
  const show = () => {
    b.classList.toggle('on', Notification.permission === 'granted');
    b.title = t(Notification.permission === 'granted' ? 'notify.on' : Notification.permission === 'denied' ? 'notify.blocked' : 'notify.ask');
  };
  show();
  // Browsers grant the permission only from a click.
  b.addEventListener('click', () => {
    Promise.resolve(Notification.requestPermission()).then(show, show);
  });
}

// ---- Sidebar ------------------------------------------------------------

function agentRow(a, opts = {}) {
  const team = teamSize(a);
  const row = el('div.row.agent-row', {
    class: `row agent-row${offline(a) ? ' offline' : ''}${isOpen(a) ? ' lit' : ''}${opts.depth ? ` depth-${opts.depth}` : ''}`,
    title: t(a.machine && !isLocal(a.machine) ? 'row.titleOn' : 'row.title', { name: a.name, pane: a.pane, machine: a.machine }),
  },
  dot(a.state),
  kindIcon(a.kind),
  el('span.name', { text: a.name }),
  S.m.gatesOf.has(a.pane) && isLocal(a.machine) ? el('span.gate-mark', { title: t('row.asks'), text: '?' }) : null,
  needsMark(a),
  el('span.spacer'),
  a.state ? stateText(a, true) : null,
  mayRelease(a) ? rowMenuButton(a) : null,
  rowMarks(a, opts, team));
  draggable(row, keyOf(a));
  clickable(row, () => openAgent(agentNow(a)));
  if (S.menu !== keyOf(a) || !mayRelease(a)) return row;
  // The row's menu (spec: "let go from the row's menu").
  return el('div.row-wrap', { dataset: { key: keyOf(a) } }, row, el('div.row-menu', { role: 'menu' },
    el('button.menu-item', { type: 'button', role: 'menuitem', text: t('row.open'), on: { click: (e) => { e.stopPropagation(); S.menu = null; openAgent(agentNow(a)); } } }),
    el('button.menu-item.let-go', { type: 'button', role: 'menuitem', text: t('row.letGo'),
      title: t('row.letGoTitle'),
      on: { click: (e) => { e.stopPropagation(); S.menu = null; release(agentNow(a)); render(); } } })));
}

// rowMarks are a row's marks on a line of their own under its name:
// its team, its role, its machine, whose worker it is, its session. They
// are never cut or hidden, at any width or depth (issue 32: at depth the
// desktop sidebar hid what the phone's drawer showed); a long one wraps.
function rowMarks(a, opts, team) {
  const marks = [
    team ? el('span.team-of', { text: t('team.of', { n: team }) }) : null,
    matesText(a),
    tokensMark(a),
    opts.badge ? el('span.badge', { text: opts.badge }) : null,
    !isLocal(a.machine) ? machineTag(a) : null,
    crossMark(a),
    opts.otherSession ? el('span.muted.small.other-session', { text: opts.otherSession }) : null,
  ].filter(Boolean);
  return marks.length ? el('span.marks', null, marks) : null;
}

// rowMenuButton opens and closes a worker row's menu.
function rowMenuButton(a) {
  const b = el('button.row-menu-btn', { type: 'button', title: t('row.more'), 'aria-haspopup': 'menu', text: '⋯' });
  listen(b, 'click', (e) => {
    e.stopPropagation();
    S.menu = S.menu === keyOf(a) ? null : keyOf(a);
    render();
  });
  return b;
}

// The mark of a worker whose coordinator is on another machine than the
// worker: "↳ parent · machine" on the coordinator's side (the worker is
// elsewhere), "worker of X on M" on the worker's own machine.
function crossMark(a) {
  const pk = parentKeyOf(a);
  if (!pk) return null;
  if (!isLocal(a.machine)) {
    // Its coordinator, or the window of the shell here that started it.
    const p = S.m.byKey.get(pk), at = !p && S.m.paneAt.get(pk), w = at && S.m.windowOf.get(at.window);
    return el('span.cross-mark.muted.small', { text: `↳ ${p ? p.name : w ? w.window.name : pk} · ${machineName(a.machine)}` });
  }
  const i = (a.parent || '').indexOf('/');
  if (i < 0 || isLocal(a.parent.slice(0, i))) return null;
  const mach = a.parentMachine || machineName(a.parent.slice(0, i));
  return el('span.cross-mark.muted.small', { text: t('cross.workerOf', { name: a.parentName || a.parent.slice(i + 1), machine: mach }) });
}

function workerNode(a, sessionID, depth) {
  const kids = S.m.children(a);
  const other = isLocal(a.machine) && a.session !== sessionID ? S.m.sessionName.get(a.session) : '';
  const row = agentRow(a, { otherSession: other, depth });
  if (!kids.length && !a.teamOf && !mates(a).length) return row;
  const tree = kids.length ? el('div.tree', null, kids.map((k) => workerNode(k, sessionID, depth + 1))) : null;
  // A worker that leads a team (or a Claude agent team): a box a step
  // stronger, its workers and teammates under it.
  if (a.teamOf || mates(a).length) return el('div.team', null, row, mateTree(a), tree);
  // A worker's own workers, in its run: under it on the guide line, no box.
  return el('div.nested', null, row, tree);
}

// The rows of a lead's teammates in the sidebar, on a blue guide line
// that is strong beside a teammate at work.
function mateTree(a) {
  if (!mates(a).length) return null;
  return el('div.tree.mate-tree', null, mates(a).map((tm) => {
    const row = el('div.row.mate-row', { class: `row mate-row${tm.state === 'working' ? ' working' : ''}`,
      title: t(tm.pane ? 'mate.title' : 'mate.titleInProcess', { name: tm.name, lead: a.name, pane: tm.pane }),
      dataset: { mate: mateKey(a, tm) } },
    dot(tm.state), kindIcon('claude'), el('span.name', { text: tm.name }), el('span.spacer'), stateText(tm, true));
    clickable(row, () => openDetail(mateKey(a, tm)));
    return row;
  }));
}

// A coordinator and its workers share one card; so do the workers a
// shell started (the shell's window heads their card: a shell is no
// agent). An orphan that has workers of its own says so as a lone one
// does: ⚠, its gone coordinator's id, Release.
function familyCard(root, sessionID) {
  const key = keyOf(root);
  const lead = S.m.orphan(root) ? agentRow(root) : agentRow(root, { badge: t('role.coordinator') });
  const card = el('div.card.family', { class: `card family${S.m.orphan(root) ? ' orphan' : ''}`, dataset: { family: key } },
    lead, S.m.orphan(root) ? orphanLine(root) : null, mateTree(root));
  card.append(...workersFold(key, S.m.children(root), sessionID));
  return card;
}

function shellCard(s, w, pane) {
  const card = el('div.card.family.shell', { dataset: { shell: pane } }, windowRow(s, w));
  card.append(...workersFold(`shell:${pane}`, S.m.shellKids.get(pane), s.id));
  return card;
}

// workersFold is a card's "Workers · 2 working" line and, open, its
// workers, the finished ones in a Completed (N) group.
function workersFold(key, kids, sessionID) {
  const active = kids.filter((k) => k.state !== 'done');
  const done = kids.filter((k) => k.state === 'done');
  const foldKey = `workers:${key}`;
  const open = !S.closed[foldKey];
  const fold = el('div.fold-line', { role: 'button', tabindex: '0' },
    el('span.caret', { text: open ? '▾' : '▸' }), t('workers.head', { counts: countText(kids) }));
  listen(fold, 'click', () => { S.closed[foldKey] = open; render(); });
  if (!open) return [fold];
  const tree = el('div.tree', null, active.map((k) => workerNode(k, sessionID, 1)));
  if (done.length) {
    const det = el('details.completed', { open: !!S.completedOpen[key] },
      el('summary', { text: t('workers.completed', { n: done.length }) }),
      done.map((k) => workerNode(k, sessionID, 1)));
    listen(det, 'toggle', () => { S.completedOpen[key] = det.open; });
    tree.append(det);
  }
  return [fold, tree];
}

function orphanLine(a) {
  return el('div.orphan-line', null,
    el('span.warn', { text: t('orphan.gone', { pane: a.parent || '?' }) }),
    el('span.spacer'),
    mayRelease(a) ? el('button.small-btn', { type: 'button', text: t('action.release'), on: { click: (e) => { e.stopPropagation(); release(agentNow(a)); } } }) : null);
}

function orphanCard(a) {
  return el('div.card.orphan', { dataset: { key: keyOf(a) } }, agentRow(a), orphanLine(a));
}

function windowRow(s, w) {
  const lit = S.open && S.open.window === w.id;
  const row = el('div.row.win-row', { class: `row win-row${lit ? ' lit' : ''}`, title: `${s.name}:${w.index} ${w.name}`, dataset: { window: w.id } },
    el('span.idx', { text: w.index }),
    el('span.name', { text: w.name }),
    w.active ? el('span.muted.small', { title: t('side.inFront'), text: '•' }) : null);
  clickable(row, () => openWindow(s.id, w.id));
  return row;
}

function ownerIn(a, sessionID) {
  let r = a;
  for (;;) {
    const p = S.m.parentOf.get(keyOf(r));
    if (!p || !isLocal(p.machine) || p.session !== sessionID) return r;
    r = p;
  }
}

function renderSidebar() {
  const nav = $('#sidebar');
  const parts = [el('div.side-title', { text: t('side.title') })];
  const m = S.m;
  for (const s of S.snap.sessions) {
    const closed = !!S.closed[`session:${s.id}`];
    const front = S.open && S.open.session === s.id;
    const head = el('div.sess-head', { class: `sess-head${front ? ' front' : ''}` },
      el('span.caret', { text: closed ? '▸' : '▾' }),
      el('span.name', { text: s.name }),
      el('span.spacer'),
      el('span.count', { text: String(s.windows.length) }));
    listen(head.querySelector('.caret'), 'click', (e) => { e.stopPropagation(); S.closed[`session:${s.id}`] = !closed; render(); });
    // A click on another session goes there; on the one in front, folds
    // it. (Its windows as they are now: the head may be older.)
    listen(head, 'click', () => {
      if (front) { S.closed[`session:${s.id}`] = !closed; render(); return; }
      const now = S.snap.sessions.find((x) => x.id === s.id) || s;
      const w = now.windows.find((x) => x.active) || now.windows[0];
      if (w) openWindow(s.id, w.id);
    });
    const body = el('div.sess-body');
    if (!closed) {
      const done = new Set();
      for (const w of s.windows) {
        const here = m.agentsIn.get(w.id) || [];
        // The shells of this window that started workers head their card.
        const shells = (w.panes || []).filter((p) => m.shellKids.has(p.id));
        for (const p of shells) body.append(shellCard(s, w, p.id));
        if (!here.length && !shells.length) { body.append(windowRow(s, w)); continue; }
        for (const a of here) {
          // The card an agent belongs to is its highest coordinator in
          // this session: the workers of a team lead share the lead's card,
          // and those of a shell here the shell's.
          const owner = ownerIn(a, s.id);
          const ok = keyOf(owner);
          const shell = owner.parentShell && m.shellKids.has(parentKeyOf(owner)) && m.paneAt.get(parentKeyOf(owner));
          if (shell && shell.session === s.id) continue;
          if (m.children(owner).length) {
            if (!done.has(ok)) { done.add(ok); body.append(familyCard(owner, s.id)); }
          } else if (m.orphan(a)) {
            body.append(orphanCard(a));
          } else if (mates(a).length) {
            // A Claude team lead in no run: its card holds its teammates.
            body.append(el('div.card.lead', null, agentRow(a, { badge: t('role.lead') }), mateTree(a)));
          } else {
            body.append(el('div.card.solo', null, agentRow(a)));
          }
        }
      }
    }
    parts.push(el('div.sess', { dataset: { session: s.id } }, head, body));
  }
  if (!S.snap.sessions.length) parts.push(el('div.muted.pad', { text: t('side.noSessions') }));
  patch(nav, el('nav', null, parts));
}

// ---- The Agents card on the terminal -----------------------------------

// The rows of the Agents card: each agent, its teammates and subagents,
// then its workers.
function flatten(a, depth, out) {
  out.push([a, depth]);
  for (const tm of mates(a)) out.push([a, depth + 1, tm, 'teammate']);
  for (const sa of subs(a)) out.push([a, depth + 1, sa, 'subagent']);
  for (const k of S.m.children(a)) flatten(k, depth + 1, out);
  return out;
}

function renderTermCard() {
  const card = $('#agents-card');
  if (!S.open) { card.hidden = true; return; }
  const m = S.m;
  // The tree of the agent on screen (spec: the coordinator and its
  // workers), not every family of its session.
  const roots = new Set();
  const shown = S.open.machine ? [m.byKey.get(`${S.open.machine}/${S.open.pane}`)] : (m.agentsIn.get(S.open.window) || []);
  for (const a of shown) {
    if (!a) continue;
    const r = m.rootOf(a);
    if (m.children(r).length || mates(r).length) roots.add(r);
  }
  if (!roots.size) { card.hidden = true; return; }
  const rows = [];
  for (const r of roots) flatten(r, 0, rows);
  // On a phone it starts as a pill, so it does not cover the terminal.
  const collapsed = S.closed.termcard ?? phone.matches;
  const head = el('div.ac-head', { role: 'button', title: t(collapsed ? 'card.show' : 'card.fold') },
    el('span.ac-pill', { title: t('card.pill') }, icon('fork'), ` ${rows.length - roots.size}`),
    collapsed ? null : el('span.ac-title', { text: t('card.title') }),
    el('span.caret', { text: collapsed ? '▸' : '▾' }));
  listen(head, 'click', () => { S.closed.termcard = !collapsed; render(); });
  const list = collapsed ? null : el('div.ac-list', null, rows.map(([a, depth, x, kind]) => {
    if (x) {
      // A teammate (blue mark) or a subagent (grey mark) under its lead.
      const key = kind === 'teammate' ? mateKey(a, x) : subKey(a, x);
      const r = el('div.ac-row', { class: `ac-row ${kind === 'teammate' ? 'mate' : 'sub'}${x.state === 'working' ? ' working' : ''}`, style: `padding-left:${8 + depth * 14}px`, dataset: { key } },
        dot(x.state), kind === 'teammate' ? kindIcon('claude') : el('span.kind.k-sub', { text: '↳' }),
        el('span.name', { text: x.name || x.type || t(`role.${kind}`) }), el('span.badge', { text: t(`role.${kind}`) }),
        el('span.spacer'), stateText(x, true));
      clickable(r, () => openDetail(key));
      return r;
    }
    const r = el('div.ac-row', { class: `ac-row${isOpen(a) ? ' lit' : ''}`, style: `padding-left:${8 + depth * 14}px`, dataset: { key: keyOf(a) } },
      dot(a.state), kindIcon(a.kind), el('span.name', { text: a.name }),
      depth === 0 ? el('span.badge', { text: t('role.coordinator') }) : null,
      el('span.spacer'), stateText(a, true));
    clickable(r, () => openAgent(agentNow(a)));
    return r;
  }));
  patch(card, el('div', null, head, list));
  card.classList.toggle('collapsed', collapsed);
  card.hidden = false;
}

// ---- The agent graph ----------------------------------------------------

const G = { w: 236, sw: 184, gapX: 28, gapY: 64, pad: 28 };

function graphCard(a) {
  const m = S.m;
  const working = a.state === 'working';
  const team = teamSize(a);
  const gates = isLocal(a.machine) ? (m.gatesOf.get(a.pane) || []) : [];
  const worker = mayRelease(a);
  const c = el('div.gcard.agent-card', { class: `gcard agent-card${offline(a) ? ' offline' : ''}${working ? ' working' : ''}${isOpen(a) ? ' lit' : ''}${m.orphan(a) ? ' orphan' : ''}${m.needsOf.has(keyOf(a)) ? ' needs' : ''}` },
    el('div.gc-head', null, kindIcon(a.kind), el('span.gc-name', { text: a.name }), needsMark(a), dot(a.state)),
    el('div.gc-role', null, el('span.badge', { text: roleLabel(a) }),
      team ? el('span.team-of', { text: t('team.of', { n: team }) }) : null,
      matesText(a),
      el('span.muted.small', { text: a.pane }),
      !isLocal(a.machine) ? machineTag(a) : null),
    el('div.gc-state', null, stateText(a), tokensMark(a) ? ' ' : null, tokensMark(a)),
    a.summary && (a.state === 'done' || a.state === 'idle') ? el('div.gc-summary', { text: a.summary, title: a.summary }) : null,
    m.orphan(a) ? el('div.warn.small', { text: t('orphan.gone', { pane: a.parent }) }) : null,
    cannotOpen(a) ? el('div.gc-note.small', { text: cannotOpen(a) }) : null,
    gates.map((g) => gateBox(g, false)),
    worker ? el('div.gc-actions', null,
      el('button.small-btn.release', { type: 'button', text: t('action.release'), title: t('action.releaseTitle'),
        on: { click: (e) => { e.stopPropagation(); release(a); } } })) : null);
  draggable(c, keyOf(a));
  clickable(c, () => { openAgent(a); });
  return c;
}

// ---- Teammates and subagents ----------------------------------------
// Cards of the agents that run under another: a teammate of the Claude
// agent team it leads, or a subagent. A click shows what it is, its state,
// its lead, its start and its path; a teammate with a pane can be opened
// from there. A teammate in a pane may be dropped on a coordinator (a
// person's choice); st never does it on its own.

const mateKey = (lead, tm) => `${keyOf(lead)}/${tm.name}`;
const subKey = (lead, sa) => `${keyOf(lead)}/${sa.id}`;

function asideCard(cls, lead, x, kind) {
  const mate = kind === 'teammate';
  const name = mate ? x.name : (x.type || t('role.subagent'));
  const c = el(`div.${cls}`, {
    class: `${cls.replace('.', ' ')} ${mate ? 'mate-card' : 'subagent-card'}${x.state === 'working' ? ' working' : ''}`,
    dataset: mate ? { mate: mateKey(lead, x) } : { sub: subKey(lead, x) },
  },
  el('div.gc-head', null, mate ? kindIcon('claude') : el('span.kind.k-sub', { text: '↳' }), el('span.gc-name', { text: name }),
    cls === 'ccard' ? el('span.spacer') : null, dot(x.state)),
  el('div.gc-role', null, el('span.badge', { class: `badge${mate ? ' b-mate' : ''}`, text: t(`role.${kind}`) }),
    mate ? el('span.muted.small', { text: x.inProcess ? t('mate.inProcess') : x.pane }) : null,
    cls === 'ccard' ? stateText(x) : null),
  cls === 'ccard' ? null : el('div.gc-state', null, stateText(x)));
  if (mate && x.pane && isLocal(lead.machine)) {
    draggable(c, x.pane);
    c.dataset.drop = 'no';
  }
  clickable(c, () => openDetail(mate ? mateKey(lead, x) : subKey(lead, x)));
  return c;
}

// The path of a teammate or subagent: Main, the agents above its lead,
// its lead, and itself.
function asidePath(lead, x, kind) {
  const chain = [];
  for (let a = lead; a; a = S.m.parentOf.get(keyOf(a))) chain.unshift(a.name);
  return [t('path.main'), ...chain, kind === 'teammate' ? x.name : (x.type || t('role.subagent'))];
}

function showDetail(lead, x, kind) {
  const d = $('#detail');
  const mate = kind === 'teammate';
  const started = x.started && !x.started.startsWith('0001-') ? new Date(x.started) : null;
  const row = (k, ...v) => el('div.dt-row', null, el('span.dt-k', { text: k }), el('span.dt-v', null, ...v));
  d.replaceChildren(...[
    el('div.dt-head', null, mate ? kindIcon('claude') : el('span.kind.k-sub', { text: '↳' }),
      el('span.dt-name', { text: mate ? x.name : (x.type || t('role.subagent')) }), el('span.spacer'),
      el('button.icon-btn.dt-close', { type: 'button', title: t('graph.close'), text: '✕', on: { click: () => hideDetail() } })),
    row(t('detail.kind'), el('span.dt-kind', { text: t(`role.${kind}`) }), mate && x.inProcess ? t('detail.inLead') : ''),
    row(t('detail.state'), el('span.dt-state', null, dot(x.state), ' ', stateName(x.state), ' · ', since(x.since))),
    row(t('detail.parent'), el('span.dt-parent', { text: `${lead.name} (${roleLabel(lead)}, ${lead.pane})` })),
    row(t('detail.started'), el('span.dt-start', { text: started ? t('detail.ago', { time: fmtTime(started), dur: fmtDur(serverNow() - started) }) : '—' })),
    row(t('detail.path'), el('span.dt-path', { text: asidePath(lead, x, kind).join(' › ') })),
    mate && x.pane ? row(t('detail.pane'), el('span', { text: x.pane })) : null,
    mate && x.pane && x.window && isLocal(lead.machine) ? el('div.dt-actions', null,
      el('button.pill-btn.dt-open', { type: 'button', text: t('detail.openPane'), on: { click: () => { hideDetail(); openWindow(x.session, x.window); } } })) : null,
  ].filter(Boolean));
  d.dataset.key = mate ? mateKey(lead, x) : subKey(lead, x);
  d.hidden = false;
}

function hideDetail() { $('#detail').hidden = true; }

// openDetail shows the teammate or subagent of key (mateKey, subKey) as
// the newest snapshot has it.
function openDetail(key) {
  const d = $('#detail');
  d.dataset.key = key;
  d.hidden = false;
  refreshDetail();
}

// A detail sheet that is open follows its agent through new snapshots,
// and closes when it is gone.
function refreshDetail() {
  const d = $('#detail');
  if (d.hidden) return;
  for (const a of S.snap.agents) {
    for (const tm of mates(a)) if (mateKey(a, tm) === d.dataset.key) { showDetail(a, tm, 'teammate'); return; }
    for (const sa of subs(a)) if (subKey(a, sa) === d.dataset.key) { showDetail(a, sa, 'subagent'); return; }
  }
  hideDetail();
}

// The graph's nodes: each knows its card's key and what the card shows
// (sig), and makes the card only when the graph has none that shows the
// same (drawGraph keeps the cards of the last drawing).
function graphTree(a) {
  const m = S.m;
  const gates = isLocal(a.machine) ? (m.gatesOf.get(a.pane) || []) : [];
  const lead = [a.name, a.pane, a.machine, roleLabel(a)];
  return {
    a, key: `a:${keyOf(a)}`, w: G.w, kind: 'agent', make: () => graphCard(a),
    // Everything graphCard reads (its clicks too: they hold a).
    sig: JSON.stringify([a, gates, m.needsOf.get(keyOf(a)), roleLabel(a), isOpen(a), m.orphan(a), offline(a), cannotOpen(a), machineName(a.machine)]),
    kids: [
      ...m.children(a).map(graphTree),
      ...mates(a).map((tm) => ({ key: `m:${mateKey(a, tm)}`, sig: JSON.stringify([tm, lead, asidePath(a, tm, 'teammate')]),
        make: () => asideCard('gcard', a, tm, 'teammate'), w: G.sw, kind: 'mate', kids: [], who: tm })),
      ...subs(a).map((sa) => ({ key: `s:${subKey(a, sa)}`, sig: JSON.stringify([sa, lead, asidePath(a, sa, 'subagent')]),
        make: () => asideCard('gcard', a, sa, 'subagent'), w: G.sw, kind: 'sub', kids: [], who: sa })),
    ],
  };
}

function renderGraph() {
  $('#agents-count').textContent = String(S.snap.agents.length);
  if (S.graphOpen) timed('st:graph', drawGraph);
}

// GC is what the graph on screen is made of: its cards by key (each with
// what it shows, its height and where it stands) and its lines by the
// two cards they join. A drawing keeps every card and line that shows
// the same as before, so that when a few agents of many change, only
// their cards are made again, measured and laid out by the browser.
const GC = { cards: new Map(), edges: new Map(), svg: null, size: '' };

// forgetGraph empties the graph (it is closed: nothing to keep up).
function forgetGraph() {
  GC.cards.clear();
  GC.edges.clear();
  GC.svg = null;
  GC.size = '';
  const canvas = $('#graph-canvas');
  canvas.replaceChildren();
  canvas.style.width = canvas.style.height = '';
}

function drawGraph() {
  const canvas = $('#graph-canvas');
  const m = S.m;
  // Teams first, then workers whose coordinator is gone, then the rest.
  const roots = [...m.roots].sort((x, y) => rank(x) - rank(y));
  function rank(a) { return m.children(a).length ? 0 : m.orphan(a) ? 1 : 2; }
  const trees = roots.map(graphTree);
  if (!trees.length) {
    forgetGraph();
    canvas.append(el('div.graph-empty', { text: t('graph.empty') }));
    return;
  }
  if (!GC.svg) {
    canvas.replaceChildren();
    GC.svg = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
    GC.svg.classList.add('edges');
    canvas.append(GC.svg);
  }
  const all = [];
  (function walk(ns, depth) { for (const n of ns) { n.depth = depth; all.push(n); walk(n.kids, depth + 1); } })(trees, 0);
  const fresh = placeCards(canvas, all);
  layOut(trees, all, fresh);
  drawEdges(all);
}

// placeCards gives each node its card: the one on screen when it shows
// the same, else a new one (hidden until it has its place). Cards of
// nodes that went are taken away. It returns the new ones, measured.
function placeCards(canvas, all) {
  const keep = new Set();
  const fresh = [];
  for (const n of all) {
    keep.add(n.key);
    const c = GC.cards.get(n.key);
    if (c && c.sig === n.sig) { n.card = c; continue; }
    const e = n.make();
    e.style.width = `${n.w}px`;
    e.style.visibility = 'hidden';
    if (c) c.el.replaceWith(e); else canvas.append(e);
    n.card = { sig: n.sig, el: e, h: 0, x: null, y: null };
    GC.cards.set(n.key, n.card);
    fresh.push(n);
  }
  for (const [k, c] of GC.cards) if (!keep.has(k)) { c.el.remove(); GC.cards.delete(k); }
  // One layout for all the new cards: every height is read after every
  // card is in (a read after a write would lay the page out each time).
  for (const n of fresh) n.card.h = n.card.el.offsetHeight;
  return fresh;
}

// layOut places the trees: each node is centred over the width its
// subtree needs, and each level is as tall as its tallest card. Only
// cards that move are written to.
function layOut(trees, all, fresh) {
  const levelH = [];
  for (const n of all) levelH[n.depth] = Math.max(levelH[n.depth] || 0, n.card.h);
  const levelY = [G.pad];
  for (let d = 1; d < levelH.length; d++) levelY[d] = levelY[d - 1] + levelH[d - 1] + G.gapY;
  const span = (n) => (n.span ??= Math.max(n.w, n.kids.reduce((s, k) => s + span(k), 0) + G.gapX * Math.max(0, n.kids.length - 1)));
  const place = (n, x0) => {
    const sp = span(n);
    n.x = x0 + (sp - n.w) / 2;
    n.y = levelY[n.depth];
    const inner = n.kids.reduce((s, k) => s + span(k), 0) + G.gapX * Math.max(0, n.kids.length - 1);
    let x = x0 + (sp - inner) / 2;
    for (const k of n.kids) { place(k, x); x += span(k) + G.gapX; }
  };
  let x = G.pad;
  for (const t of trees) { place(t, x); x += span(t) + G.gapX * 2; }
  for (const n of all) {
    const c = n.card;
    if (c.x !== n.x) { c.el.style.left = `${n.x}px`; c.x = n.x; }
    if (c.y !== n.y) { c.el.style.top = `${n.y}px`; c.y = n.y; }
  }
  for (const n of fresh) n.card.el.style.visibility = '';
  const width = x - G.gapX * 2 + G.pad;
  const height = levelY[levelY.length - 1] + levelH[levelH.length - 1] + G.pad;
  if (GC.size !== `${width}x${height}`) {
    GC.size = `${width}x${height}`;
    const canvas = $('#graph-canvas');
    canvas.style.width = `${width}px`;
    canvas.style.height = `${height}px`;
    GC.svg.setAttribute('width', width);
    GC.svg.setAttribute('height', height);
  }
}

// drawEdges draws the line from each card to each card below it, keeping
// the lines that did not change.
function drawEdges(all) {
  const keep = new Set();
  for (const n of all) {
    for (const k of n.kids) {
      const key = `${n.key}>${k.key}`;
      keep.add(key);
      const x1 = n.x + n.w / 2, y1 = n.y + n.card.h;
      const x2 = k.x + k.w / 2, y2 = k.y;
      const my = (y1 + y2) / 2;
      const d = `M${x1},${y1} C${x1},${my} ${x2},${my} ${x2},${y2}`;
      const active = (k.who || k.a).state === 'working';
      // Thick green from a coordinator to its workers, blue to a teammate
      // of a Claude agent team, thin grey to a subagent; strong while the
      // one below works.
      const cls = `edge ${{ agent: 'edge-worker', mate: 'edge-team', sub: 'edge-subagent' }[k.kind]}${active ? ' active' : ''}`;
      let p = GC.edges.get(key);
      if (!p) {
        p = document.createElementNS('http://www.w3.org/2000/svg', 'path');
        if (k.kind === 'agent') p.dataset.to = keyOf(k.a);
        GC.svg.append(p);
        GC.edges.set(key, p);
      }
      if (p.getAttribute('d') !== d) p.setAttribute('d', d);
      if (p.getAttribute('class') !== cls) p.setAttribute('class', cls);
    }
  }
  for (const [k, p] of GC.edges) if (!keep.has(k)) { p.remove(); GC.edges.delete(k); }
}

// setGraph opens or closes the agent graph. home: it opens as the first
// screen, with no window open (issue 32, item 12), and the ◇ Agents
// button then keeps it open rather than closing it.
function setGraph(open, home) {
  if (phone.matches && open) { setView('chart'); return; }
  S.graphHome = !!(open && home);
  S.graphOpen = open;
  $('#graph').hidden = !open;
  if (!open) forgetGraph();
  $('#termview').classList.toggle('under', open);
  $('#agents-btn').classList.toggle('on', open);
  if (open) renderGraph();
  else if (term) term.focus();
}

// ---- The phone's Agents chart -------------------------------------------

function chartCard(a, depth, line) {
  const gates = isLocal(a.machine) ? (S.m.gatesOf.get(a.pane) || []) : [];
  const team = teamSize(a);
  const c = el('div.ccard.agent-card', { class: `ccard agent-card${offline(a) ? ' offline' : ''}${a.state === 'working' ? ' working' : ''}${S.m.needsOf.has(keyOf(a)) ? ' needs' : ''}`, dataset: { agent: keyOf(a) } },
    el('div.gc-head', null, kindIcon(a.kind), el('span.gc-name', { text: a.name }), needsMark(a),
      team ? el('span.team-of', { text: t('team.of', { n: team }) }) : null, matesText(a),
      el('span.spacer'), dot(a.state)),
    el('div.gc-role', null, el('span.badge', { text: roleLabel(a) }), ' ', stateText(a),
      tokensMark(a) ? ' ' : null, tokensMark(a),
      !isLocal(a.machine) ? machineTag(a) : null),
    a.summary && a.state === 'done' ? el('div.gc-summary', { text: a.summary }) : null,
    S.m.orphan(a) ? el('div.warn.small', { text: t('orphan.gone', { pane: a.parent }) }) : null,
    cannotOpen(a) ? el('div.gc-note.small', { text: cannotOpen(a) }) : null,
    gates.map((g) => gateBox(g, false)),
    mayRelease(a) ? el('div.gc-actions', null, el('button.small-btn.release', { type: 'button', text: t('action.release'),
      on: { click: (e) => { e.stopPropagation(); release(agentNow(a)); } } })) : null);
  clickable(c, () => openAgent(agentNow(a)));
  const kids = [
    ...S.m.children(a).map((k) => chartCard(k, depth + 1, 'worker')),
    ...mates(a).map((tm) => el('div.cnode', { class: `cnode line-team${tm.state === 'working' ? ' active' : ''}` }, asideCard('ccard', a, tm, 'teammate'))),
    ...subs(a).map((sa) => el('div.cnode', { class: `cnode line-sub${sa.state === 'working' ? ' active' : ''}` }, asideCard('ccard', a, sa, 'subagent'))),
  ];
  return el('div.cnode', { class: `cnode${line ? ` line-${line}` : ''}${a.state === 'working' ? ' active' : ''}` },
    c, kids.length ? el('div.ckids', null, kids) : null);
}

function currentSession() {
  if (S.open && S.open.session) return S.open.session;
  if (S.open) { // another machine's window: the session its tree is in here
    const a = S.m.byKey.get(`${S.open.machine}/${S.open.pane}`);
    const h = a && S.m.homeOf(a);
    if (h) return h.session;
  }
  const r = S.m.roots.find((a) => S.m.homeOf(a) && (S.m.children(a).length || mates(a).length));
  return r ? S.m.homeOf(r).session : (S.snap.sessions[0] || {}).id;
}

function renderChart() {
  const scopes = ['session', 'machine'];
  if (S.m.others) scopes.push('all');
  if (S.scope === 'all' && !S.m.others) S.scope = 'machine';
  patch($('#scopes'), el('div', null, scopes.map((k) => el('button.scope', {
    class: `scope${S.scope === k ? ' on' : ''}`, type: 'button', role: 'tab', 'aria-selected': S.scope === k ? 'true' : 'false', text: t(`scope.${k}`),
    on: { click: () => { S.scope = k; render(); } },
  }))));
  const sess = currentSession();
  // This machine's scopes are its tree (homeOf): its agents, the workers
  // its shells started elsewhere, and other machines' members of it.
  const inScope = (a) => { const h = S.m.homeOf(a); return S.scope === 'all' || (!!h && (S.scope === 'machine' || h.session === sess)); };
  const roots = S.m.roots.filter((a) => delegates(a) && inScope(a));
  const tree = $('#chart-tree');
  // With all machines in scope, the account's machines head the chart; an
  // offline one is dimmed, and one that takes no workers says so.
  const strip = S.scope === 'all' && (S.snap.machines || []).length ? el('div.machines', null,
    S.snap.machines.map((m) => el('span.mchip', {
      class: `mchip${m.online ? '' : ' offline'}${m.this ? ' this' : ''}`, dataset: { machine: m.slug },
      title: t(m.accepts || m.this ? (m.online ? 'machine.online' : 'machine.offline') : 'machine.noWorkers', { name: m.name }),
      text: t(m.online ? 'machine.tag' : 'machine.tagOffline', { name: m.name }),
    }))) : null;
  if (!roots.length) {
    patch(tree, el('div', null, strip, el('p.empty', { text: t('chart.empty') })));
    return;
  }
  patch(tree, el('div', null, strip, roots.map((r) => chartCard(r, 0, ''))));
}

function setView(v) {
  document.body.dataset.view = v;
  document.body.classList.remove('drawer');
  if (v === 'term' && term) scheduleFit();
}

// ---- The terminal -------------------------------------------------------

let term = null, fit = null, termWS = null, fitTimer = null;
const enc = new TextEncoder();

function ensureTerm() {
  if (term) return;
  term = new Terminal({
    cursorBlink: true,
    fontFamily: 'ui-monospace, "JetBrains Mono", "DejaVu Sans Mono", Menlo, Consolas, monospace',
    fontSize: 13,
    scrollback: 2000,
    theme: {
      background: '#0b0e14', foreground: '#d1d7e0', cursor: '#e6edf3', selectionBackground: '#264f78',
      black: '#484f58', red: '#ff7b72', green: '#3fb950', yellow: '#d29922', blue: '#58a6ff',
      magenta: '#bc8cff', cyan: '#39c5cf', white: '#b1bac4',
      brightBlack: '#6e7681', brightRed: '#ffa198', brightGreen: '#56d364', brightYellow: '#e3b341',
      brightBlue: '#79c0ff', brightMagenta: '#d2a8ff', brightCyan: '#56d4dd', brightWhite: '#f0f6fc',
    },
  });
  fit = new FitAddon();
  term.loadAddon(fit);
  term.open($('#term'));
  term.onData((d) => sendInput(enc.encode(d)));
  term.onBinary((d) => sendInput(Uint8Array.from(d, (c) => c.charCodeAt(0) & 255)));
  new ResizeObserver(scheduleFit).observe($('#termwrap'));
}

function sendInput(bytes) {
  if (S.ro || !termWS || termWS.readyState !== WebSocket.OPEN) return;
  termWS.send(bytes);
}

function scheduleFit() {
  clearTimeout(fitTimer);
  fitTimer = setTimeout(() => {
    if (!term || $('#termview').offsetParent === null) return;
    fit.fit();
    if (termWS && termWS.readyState === WebSocket.OPEN) {
      termWS.send(JSON.stringify({ type: 'resize', cols: term.cols, rows: term.rows }));
    }
  }, 60);
}

function wsURL(path, params) {
  const u = new URL(path, location.href);
  u.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
  u.search = params ? new URLSearchParams(params).toString() : '';
  u.hash = '';
  return u.toString();
}

function openWindow(session, window) {
  if (!session || !window) return;
  S.open = { session, window };
  history.replaceState(null, '', `#s=${encodeURIComponent(session)}&w=${encodeURIComponent(window)}`);
  showTerm();
}

// openRemote opens the window of an agent on another machine of the
// account, bridged by this machine's st over the peer connection.
function openRemote(machine, pane) {
  S.open = { machine, pane };
  history.replaceState(null, '', `#m=${encodeURIComponent(machine)}&p=${encodeURIComponent(pane)}`);
  showTerm();
}

function showTerm() {
  if (S.graphOpen) setGraph(false);
  if (phone.matches) setView('term');
  $('#term-empty').hidden = true;
  ensureTerm();
  connectTerm();
  render();
}

function termTitle() {
  if (!S.open) return t('term.none');
  if (S.open.machine) {
    const a = S.m && S.m.byKey.get(`${S.open.machine}/${S.open.pane}`);
    return t('term.on', { name: a ? a.name : S.open.pane, machine: machineName(S.open.machine) });
  }
  const info = S.m && S.m.windowOf.get(S.open.window);
  return info ? `${info.session.name}:${info.window.index} ${info.window.name}` : S.open.window;
}

function connectTerm() {
  if (termWS) { termWS.onclose = null; termWS.close(); termWS = null; }
  $('#term-closed').hidden = true;
  term.reset();
  term.options.disableStdin = S.ro;
  if ($('#termview').offsetParent !== null) fit.fit();
  const where = S.open.machine ? { machine: S.open.machine, pane: S.open.pane } : { session: S.open.session, window: S.open.window };
  const ws = stSocket(wsURL('term', { ...where, cols: term.cols, rows: term.rows, ro: S.ro ? '1' : '0' }));
  ws.binaryType = 'arraybuffer';
  termWS = ws;
  ws.onmessage = (ev) => { if (typeof ev.data !== 'string') term.write(new Uint8Array(ev.data)); };
  ws.onopen = () => { scheduleFit(); };
  ws.onclose = (ev) => {
    if (termWS !== ws) return;
    termWS = null;
    $('#term-closed-msg').textContent = closedText(ev);
    $('#term-closed').hidden = false;
  };
  term.focus();
}

// closedText says why the terminal's socket closed: st's own close codes
// in the page's language, the reason as st (or the other machine) gave it.
function closedText(ev) {
  const cause = ev.code >= 4000 && ev.code < 5000 ? t(`term.code.${ev.code}`) : '';
  if (cause && ev.reason && cause !== `term.code.${ev.code}`) return t('term.closedCode', { cause, why: ev.reason });
  return ev.reason ? t('term.closedWhy', { why: ev.reason }) : t('term.closed');
}

// ---- Drawing ------------------------------------------------------------

// PRESS_HOLD is the longest a press holds snapshots back (a release that
// never comes, say the pointer left the window, holds them no longer).
const PRESS_HOLD = 1500;

// drawPending draws a snapshot that waited for a press, once the press's
// click (which follows its release) is done.
function drawPending() {
  setTimeout(() => {
    if (S.pending && !S.drag && !S.pressed) { S.pending = false; render(); }
  }, 0);
}

function holdForClicks() {
  document.addEventListener('pointerdown', () => {
    S.pressed = Date.now();
    setTimeout(() => { if (S.pressed && Date.now() - S.pressed >= PRESS_HOLD) { S.pressed = 0; drawPending(); } }, PRESS_HOLD);
  }, true);
  const up = () => { S.pressed = 0; drawPending(); };
  document.addEventListener('pointerup', up, true);
  document.addEventListener('pointercancel', up, true);
}

// timed runs draw between two points of the page's performance timeline,
// as a measure called name, so that the time the drawing takes can be read
// back (performance.getEntriesByType('measure'); bench/webui does). Only
// the newest measure of each name stays in the timeline, so that a page
// open for days does not fill it; an observer sees each one.
function timed(name, draw) {
  const start = performance.now();
  try {
    return draw();
  } finally {
    performance.clearMeasures(name);
    performance.measure(name, { start, end: performance.now() });
  }
}

function render() {
  if (!S.snap) return;
  // A click needs its press and release on the same element: a snapshot
  // drawn in between would take the element away and lose the click.
  if (S.drag || (S.pressed && Date.now() - S.pressed < PRESS_HOLD)) { S.pending = true; return; }
  timed('st:render', drawAll);
}

function drawAll() {
  $('#machine').textContent = S.snap.machine || '';
  $('#term-title').textContent = termTitle();
  renderNeeds();
  renderLimits();
  renderGates();
  renderSidebar();
  renderTermCard();
  renderGraph();
  // The chart is the phone's (app.css shows it only there); phone's
  // change draws it.
  if (phone.matches) renderChart();
  refreshDetail();
}

function onSnapshot(snap) {
  S.snap = snap;
  S.m = buildModel(snap);
  notifyGates();
  notifyNeeds();
  if (!S.open && !S.triedHash) {
    S.triedHash = true;
    const h = new URLSearchParams(location.hash.slice(1));
    if (h.get('s') && h.get('w') && S.m.windowOf.has(h.get('w'))) { openWindow(h.get('s'), h.get('w')); return; }
    const ra = h.get('m') && h.get('p') && S.m.byKey.get(`${h.get('m')}/${h.get('p')}`);
    if (ra && !cannotOpen(ra)) { openRemote(ra.machine, ra.pane); return; }
  }
  // With no window open, the first screen shows the team (the phone's
  // is its chart already) rather than an empty terminal.
  if (!S.homeShown) {
    S.homeShown = true;
    if (!S.open && !phone.matches && !S.graphOpen) setGraph(true, true);
  }
  renderSoon();
}

// Snapshots can come faster than a page draws them (many agents changing
// at once): a snapshot is drawn at the browser's next frame, and one that
// comes before then takes its place, so the page draws at most once a
// frame and never falls behind.
let renderAsked = false;
function renderSoon() {
  if (renderAsked) return;
  renderAsked = true;
  requestAnimationFrame(() => { renderAsked = false; render(); });
}

// ---- The state socket ---------------------------------------------------

let retry = 0;
let refused = false; // st refused the session: no more tries until a new one comes
function setConn(state, text) {
  const c = $('#conn');
  c.dataset.state = state;
  c.textContent = text;
}

// applyPatch is snap with a patch of /api/events applied: the agents that
// changed, by their index, and any other part that changed, whole. (A
// socket's first message is the whole snapshot, and so is one after the
// agents themselves changed.)
function applyPatch(snap, p) {
  const s = { ...snap, agents: [...snap.agents] };
  for (const [i, a] of Object.entries(p.agents || {})) s.agents[Number(i)] = a;
  for (const k of ['machine', 'sessions', 'gates', 'machines', 'attention', 'prompts', 'limits']) if (k in p) s[k] = p[k];
  return s;
}

function connectEvents() {
  const ws = stSocket(wsURL('api/events'));
  ws.onopen = () => { retry = 0; setConn('live', t('conn.live')); };
  ws.onmessage = (ev) => {
    const msg = JSON.parse(ev.data);
    S.offset = Date.parse(msg.now) - Date.now();
    if (msg.type === 'snapshot') { setConn('live', t('conn.live')); onSnapshot(msg.snapshot); }
    else if (msg.type === 'patch' && S.snap) { setConn('live', t('conn.live')); onSnapshot(applyPatch(S.snap, msg.patch)); }
    else if (msg.type === 'error') setConn('error', t('conn.error', { why: msg.error }));
  };
  ws.onclose = async () => {
    setConn('down', t('conn.reconnecting'));
    retry = Math.min(retry + 1, 5);
    try {
      const r = await stApi('api/state');
      if (r.status === 401) {
        // st restarted (sessions die with it) or this page never had one.
        // A link opened in another tab of this address brings a new one.
        if (storedSession() && storedSession() !== session) { session = storedSession(); setTimeout(connectEvents, 0); return; }
        refused = true;
        setConn('down', t('conn.tokenRefused'));
        return;
      }
    } catch { /* the daemon is down: keep trying */ }
    setTimeout(connectEvents, 500 * retry);
  };
}

// ---- The sidebar's width ------------------------------------------------

// SIDE_KEY keeps the width a person dragged the sidebar to, per browser.
const SIDE_KEY = 'st-sidebar-width';
const SIDE_MIN = 220;

function setSideWidth(px) {
  const w = Math.round(Math.max(SIDE_MIN, Math.min(px, window.innerWidth - 320, 720)));
  $('#layout').style.setProperty('--side-w', `${w}px`);
  return w;
}

// sidebarGrip lets a person drag the sidebar's edge, so that long names
// show whole where there is room; the width is kept in localStorage.
function sidebarGrip() {
  let stored = 0;
  try { stored = Number(localStorage.getItem(SIDE_KEY)) || 0; } catch { /* private mode */ }
  if (stored) setSideWidth(stored);
  const grip = $('#side-grip');
  const keep = (w) => { try { localStorage.setItem(SIDE_KEY, String(w)); } catch { /* private mode: this page only */ } };
  // The keyboard's arrows move it too.
  grip.tabIndex = 0;
  grip.addEventListener('keydown', (e) => {
    const step = { ArrowLeft: -16, ArrowRight: 16 }[e.key];
    if (!step) return;
    e.preventDefault();
    keep(setSideWidth($('#sidebar').getBoundingClientRect().width + step));
    scheduleFit();
  });
  grip.addEventListener('pointerdown', (e) => {
    if (e.button !== 0) return;
    e.preventDefault();
    grip.setPointerCapture(e.pointerId);
    grip.classList.add('dragging');
    const x0 = e.clientX, w0 = $('#sidebar').getBoundingClientRect().width;
    let w = w0;
    const move = (ev) => { w = setSideWidth(w0 + ev.clientX - x0); scheduleFit(); };
    const up = () => {
      grip.removeEventListener('pointermove', move);
      grip.removeEventListener('pointerup', up);
      grip.removeEventListener('pointercancel', up);
      grip.classList.remove('dragging');
      keep(w);
    };
    grip.addEventListener('pointermove', move);
    grip.addEventListener('pointerup', up);
    grip.addEventListener('pointercancel', up);
  });
}

// ---- Start --------------------------------------------------------------

function start() {
  // The token did its work when the page loaded (the page keeps its
  // session now); keep it out of the address bar, the history and bookmarks.
  if (new URLSearchParams(location.search).has('token')) {
    history.replaceState(null, '', location.pathname + location.hash);
  }
  translatePage(document);
  holdForClicks();
  document.body.dataset.view = 'chart';
  $('#agents-btn').addEventListener('click', () => setGraph(!S.graphOpen || S.graphHome));
  sidebarGrip();
  $('#graph-close').addEventListener('click', () => setGraph(false));
  $('#menu').addEventListener('click', (e) => { e.stopPropagation(); document.body.classList.toggle('drawer'); });
  // On a phone the sidebar is a drawer over the page: a tap beside it closes it.
  document.addEventListener('click', (e) => {
    if (document.body.classList.contains('drawer') && !e.target.closest('#sidebar')) {
      e.preventDefault();
      e.stopPropagation();
      document.body.classList.remove('drawer');
    }
  }, true);
  $('#back').addEventListener('click', () => setView('chart'));
  $('#reconnect').addEventListener('click', () => { if (S.open) connectTerm(); });
  $('#ro').addEventListener('change', (e) => { S.ro = e.target.checked; if (S.open) connectTerm(); });
  document.addEventListener('keydown', (e) => {
    if (e.key !== 'Escape') return;
    if (!$('#detail').hidden) hideDetail();
    else if (S.graphOpen) setGraph(false);
  });
  phone.addEventListener('change', () => { if (!phone.matches) document.body.classList.remove('drawer'); scheduleFit(); render(); });
  setupNotify();
  setInterval(tickDurations, 1000);
  // A link opened in another tab of this address gives a page refused
  // after a restart of st its new session.
  window.addEventListener('storage', (e) => {
    if (e.key === SESSION_KEY && e.newValue && e.newValue !== session && refused) {
      session = e.newValue;
      refused = false;
      connectEvents();
    }
  });
  connectEvents();
}

start();
