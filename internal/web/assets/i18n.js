// The web UI's texts, in English and Korean (the spec's Korean pages give
// the web terminal's Korean words: "워커 · 작업 중 2, 끝남 1", "끝난 워커
// N명", the chart's empty text), and t(), which picks one for the
// browser's languages with English as the fallback. The drawing code
// (app.js) holds no text of its own: internal/web's TestNoTextInDrawingCode
// fails when it does, and TestCatalogue when a key or a placeholder is
// missing in one language.
//
// A text is a string with {placeholders}, or, where a count goes in, an
// object of plural forms (Intl.PluralRules' categories; "other" always).
// {name|은} puts the Korean particle (은/는, 이/가, 을/를, 와/과, 으로/로)
// that fits the word after it.

export const CATALOGUE = {
  en: {
    'app.windows': 'Windows',
    'app.sessionsAndWindows': 'Sessions and windows',
    'app.graphButton': 'The agent graph',
    'app.agents': '◇ Agents',
    'app.notifications': 'Notifications',
    'conn.connecting': 'connecting…',
    'conn.live': 'live',
    'conn.reconnecting': 'reconnecting…',
    'conn.tokenRefused': 'token refused: open the URL st web prints',
    'conn.error': 'st: {why}',

    'notify.ask': 'Notify me when an agent asks a question',
    'notify.on': 'Questions from agents will notify you',
    'notify.blocked': 'Notifications are blocked in this browser',
    'notify.asks': '{name} asks',
    'notify.someone': 'An agent',

    'term.back': '← Agents',
    'term.backTitle': 'Back to the Agents chart',
    'term.none': 'No window open',
    'term.readOnly': 'Read-only',
    'term.readOnlyTitle': 'Watch without typing',
    'term.pick': 'Pick a window on the left to open its terminal.',
    'term.reconnect': 'Reconnect',
    'term.on': '{name} on {machine}',
    'term.closed': 'Disconnected.',
    'term.closedWhy': 'Disconnected: {why}',
    'term.closedCode': 'Disconnected ({cause}): {why}',
    'term.code.4400': 'not a window st can open',
    'term.code.4403': 'refused',
    'term.code.4404': 'the window is gone',
    'term.code.4500': 'tmux failed',
    'term.code.4502': 'the other machine cannot be reached',

    'graph.label': 'Agent graph',
    'graph.title': '◇ Agents',
    'graph.hint': 'Click a card for its terminal · drop a card on another to adopt it',
    'graph.close': 'Close (Esc)',
    'graph.empty': 'No agents yet. Start one in a window, or let a coordinator start workers.',

    'chart.label': 'Agents chart',
    'chart.empty': 'No agent is handing work to another.',
    'scope.session': 'This session',
    'scope.machine': 'This machine',
    'scope.all': 'All machines',

    'role.coordinator': 'coordinator',
    'role.worker': 'worker',
    'role.lead': 'team lead',
    'role.agent': 'agent',
    'kind.claude': 'Claude Code',
    'kind.codex': 'Codex',
    'kind.gemini': 'Gemini CLI',
    'kind.opencode': 'opencode',
    'kind.sim': 'simulated agent',
    'role.teammate': 'teammate',
    'role.subagent': 'subagent',

    'state.starting': 'starting',
    'state.blocked': 'blocked',
    'state.working': 'working',
    'state.waiting': 'waiting',
    'state.idle': 'idle',
    'state.paused': 'paused',
    'state.pausedUntil': 'paused (usage limit, resets {time})',
    'state.pausedMoved': 'paused (usage limit, resets {time}; its task moved)',
    'state.done': 'done',
    'state.failed': 'failed',
    'state.gone': 'gone',
    'state.unreachable': 'unreachable',
    'state.since': '{state} since {time}',
    'state.fromScreen': '(from its screen)',
    'state.fromScreenTitle': 'this agent has no hooks: st reads its state from its screen',
    'state.count': '{n} {state}',
    'list.sep': ', ',

    'dur.s': '{s}s',
    'dur.ms': '{m}m {s}s',
    'dur.hm': '{h}h {m}m',
    'dur.dh': '{d}d {h}h',
    'short.s': '{n}s',
    'short.m': '{n}m',
    'short.h': '{n}h',
    'short.d': '{n}d',

    'team.of': 'team of {n}',
    'tokens.count': '{n} tokens',
    'tokens.cost': '{n} tokens · ~{cost}',
    'tokens.title': 'What its agent spent, read from its own records: {total} tokens (input {input}, output {output}, cache read {cacheRead}, cache write {cacheWrite}, reasoning {reasoning})',
    'tokens.estimate': 'The cost is an estimate from the price table of {date}',
    'tokens.agentCost': '{n} tokens · {cost}',
    'tokens.byAgent': 'The cost is the agent\'s own figure',
    'limits.near': '{agent}: {window} limit {pct} % used, resets {resets}',
    'limits.nearNoReset': '{agent}: {window} limit {pct} % used',
    'limits.title': 'Near a usage limit, as the agent itself says',
    'limits.agentAccount': '{agent} ({account})',
    'limits.hours': '{n}-hour',
    'limits.days': '{n}-day',
    'limits.minutes': '{n}-minute',
    'mates.count': { one: '{n} teammate', other: '{n} teammates' },
    'workers.head': 'Workers · {counts}',
    'workers.completed': 'Completed ({n})',
    'card.pill': 'workers, teammates and subagents',
    'card.title': 'Agents',
    'card.show': 'Show the agents',
    'card.fold': 'Fold',

    'side.title': 'Sessions',
    'side.widen': 'Drag to widen the sidebar (kept in this browser)',
    'side.noSessions': 'No tmux sessions.',
    'side.inFront': 'in front for tmux clients',
    'row.title': '{name} ({pane})',
    'row.titleOn': '{name} ({pane} on {machine})',
    'row.asks': 'asks a question',
    'row.more': 'More',
    'row.open': 'Open',
    'row.letGo': 'Let go',
    'row.letGoTitle': 'Release this worker: it keeps running, with no coordinator',
    'mate.title': '{name}: teammate of {lead} ({pane})',
    'mate.titleInProcess': '{name}: teammate of {lead}, in its process',
    'mate.inProcess': 'in-process',
    'cross.workerOf': 'worker of {name} on {machine}',
    'orphan.gone': '⚠ coordinator {pane} is gone',

    'machine.tag': '⌂ {name}',
    'machine.tagOffline': '⌂ {name} (offline)',
    'machine.online': '{name}',
    'machine.offline': '{name} is offline',
    'machine.noWorkers': '{name} does not take workers from other machines. Run st orch accept-remote on on that machine.',
    'open.offline': '{name} is offline: its windows open when its st is back.',
    'open.noAccept': '{name} takes no workers from other machines now, and opens its windows to them only while it does. Run st orch accept-remote on on {name}.',

    'action.release': 'Release',
    'action.releaseTitle': 'Let this worker go: it keeps running, with no coordinator',
    'gate.asks': '{name} asks: ',
    'gate.amount': 'Amount: 5M, $20',
    'gate.setAmount': 'Go on with this budget',
    'prompt.wants': '{name} asks to use {tool}:',
    'prompt.asks': '{name} asks you:',
    'prompt.allow': 'Allow once',
    'prompt.deny': 'Deny',
    'prompt.open': 'Open window',
    'prompt.openTitle': 'The same question waits in the agent\'s window: answer it there instead',
    'prompt.inWindow': 'Answer it in its window',

    'attn.title': 'Needs you ({n})',
    'attn.pageTitle': '({n}) st · needs you',
    'attn.permission': '{name} asks leave to run',
    'attn.question': '{name} asks',
    'attn.gate': '{name} waits for a decision',
    'attn.no-report': '{name} ended its turn without a report',
    'attn.failed': '{name} failed',
    'attn.paused': '{name} is paused at a usage limit',
    'attn.run-done': 'Every worker of {name} is done',
    'attn.open': 'Open',
    'attn.openTitle': 'Open its window',
    'attn.dismiss': 'Dismiss',
    'attn.dismissTitle': 'I have seen to it: take it off the list',
    'attn.mark': 'needs you',
    'attn.askWhy': 'st can tell you when an agent needs you while this page is in the background.',
    'attn.askAllow': 'Allow notifications',
    'attn.askLater': 'Not now',
    'toast.dismissed': 'Dismissed',

    'toast.answered': 'Answered “{option}”',
    'toast.released': 'Released {name}',
    'toast.adopting': '{lead} is adopting {name}…',
    'toast.adopted': '{name} now works for {lead}',
    'toast.stSays': '{why}',
    'toast.noAnswer': 'st did not answer: {why}',

    'detail.label': 'Teammate or subagent',
    'detail.kind': 'Kind',
    'detail.state': 'State',
    'detail.parent': 'Parent',
    'detail.started': 'Started',
    'detail.path': 'Path',
    'detail.pane': 'Pane',
    'detail.inLead': ' (in its lead\'s process)',
    'detail.ago': '{time} ({dur} ago)',
    'detail.openPane': 'Open its pane',
    'path.main': 'Main',
  },
  ko: {
    'app.windows': '창 목록',
    'app.sessionsAndWindows': '세션과 창',
    'app.graphButton': '에이전트 그래프',
    'app.agents': '◇ 에이전트',
    'app.notifications': '알림',
    'conn.connecting': '연결하는 중…',
    'conn.live': '연결됨',
    'conn.reconnecting': '다시 연결하는 중…',
    'conn.tokenRefused': '토큰이 거절되었습니다. st web이 알려 주는 주소를 여세요',
    'conn.error': 'st: {why}',

    'notify.ask': '에이전트가 질문하면 알려 주기',
    'notify.on': '에이전트의 질문을 알려 드립니다',
    'notify.blocked': '이 브라우저에서 알림이 막혀 있습니다',
    'notify.asks': '{name}의 질문',
    'notify.someone': '에이전트',

    'term.back': '← 에이전트',
    'term.backTitle': '에이전트 차트로 돌아가기',
    'term.none': '열린 창 없음',
    'term.readOnly': '읽기 전용',
    'term.readOnlyTitle': '입력하지 않고 보기만 합니다',
    'term.pick': '왼쪽에서 창을 골라 터미널을 여세요.',
    'term.reconnect': '다시 연결',
    'term.on': '{machine}의 {name}',
    'term.closed': '연결이 끊겼습니다.',
    'term.closedWhy': '연결이 끊겼습니다: {why}',
    'term.closedCode': '연결이 끊겼습니다({cause}): {why}',
    'term.code.4400': 'st가 열 수 있는 창이 아닙니다',
    'term.code.4403': '거절되었습니다',
    'term.code.4404': '창이 없습니다',
    'term.code.4500': 'tmux가 실패했습니다',
    'term.code.4502': '다른 장치에 닿지 않습니다',

    'graph.label': '에이전트 그래프',
    'graph.title': '◇ 에이전트',
    'graph.hint': '카드를 누르면 터미널이 열립니다 · 카드를 다른 카드에 끌어 놓으면 그 에이전트의 워커로 데려옵니다',
    'graph.close': '닫기 (Esc)',
    'graph.empty': '아직 에이전트가 없습니다. 창에서 에이전트를 시작하거나, 코디네이터가 워커를 띄우게 하세요.',

    'chart.label': '에이전트 차트',
    'chart.empty': '다른 에이전트에게 일을 맡긴 에이전트가 없습니다.',
    'scope.session': '이 세션',
    'scope.machine': '이 머신',
    'scope.all': '모든 머신',

    'role.coordinator': '코디네이터',
    'role.worker': '워커',
    'role.lead': '팀장',
    'role.agent': '에이전트',
    'kind.claude': 'Claude Code',
    'kind.codex': 'Codex',
    'kind.gemini': 'Gemini CLI',
    'kind.opencode': 'opencode',
    'kind.sim': '시뮬레이션 에이전트',
    'role.teammate': '팀원',
    'role.subagent': '서브에이전트',

    'state.starting': '시작하는 중',
    'state.blocked': '막힘',
    'state.working': '작업 중',
    'state.waiting': '입력 대기',
    'state.idle': '쉬는 중',
    'state.paused': '일시 정지',
    'state.pausedUntil': '일시 정지 (사용 한도, {time}에 초기화)',
    'state.pausedMoved': '일시 정지 (사용 한도, {time}에 초기화, 작업은 옮겨짐)',
    'state.done': '끝남',
    'state.failed': '실패',
    'state.gone': '사라짐',
    'state.unreachable': '연결 안 됨',
    'state.since': '{time}부터 {state}',
    'state.fromScreen': '(화면으로 판단)',
    'state.fromScreenTitle': '이 에이전트에는 훅이 없어 st가 화면을 읽어 상태를 판단합니다',
    'state.count': '{state} {n}',
    'list.sep': ', ',

    'dur.s': '{s}초',
    'dur.ms': '{m}분 {s}초',
    'dur.hm': '{h}시간 {m}분',
    'dur.dh': '{d}일 {h}시간',
    'short.s': '{n}초',
    'short.m': '{n}분',
    'short.h': '{n}시간',
    'short.d': '{n}일',

    'team.of': '팀 {n}명',
    'tokens.count': '토큰 {n}',
    'tokens.cost': '토큰 {n} · 약 {cost}',
    'tokens.title': '에이전트가 쓴 토큰 (에이전트 자신의 기록에서 읽음): 모두 {total} (입력 {input}, 출력 {output}, 캐시 읽기 {cacheRead}, 캐시 쓰기 {cacheWrite}, 추론 {reasoning})',
    'tokens.estimate': '비용은 {date} 가격표로 어림한 값입니다',
    'tokens.agentCost': '토큰 {n} · {cost}',
    'tokens.byAgent': '비용은 에이전트가 직접 밝힌 값입니다',
    'limits.near': '{agent}: {window} 한도의 {pct}% 사용, {resets}에 초기화',
    'limits.nearNoReset': '{agent}: {window} 한도의 {pct}% 사용',
    'limits.title': '사용 한도에 가까움 (에이전트가 직접 밝힌 값)',
    'limits.agentAccount': '{agent} ({account})',
    'limits.hours': '{n}시간',
    'limits.days': '{n}일',
    'limits.minutes': '{n}분',
    'mates.count': { other: '팀원 {n}명' },
    'workers.head': '워커 · {counts}',
    'workers.completed': '끝난 워커 {n}명',
    'card.pill': '워커, 팀원, 서브에이전트',
    'card.title': '에이전트',
    'card.show': '에이전트 보기',
    'card.fold': '접기',

    'side.title': '세션',
    'side.widen': '끌어서 사이드바 너비를 바꿉니다 (이 브라우저에 저장됩니다)',
    'side.noSessions': 'tmux 세션이 없습니다.',
    'side.inFront': 'tmux 클라이언트에서 앞에 있는 창',
    'row.title': '{name} ({pane})',
    'row.titleOn': '{name} ({machine}의 {pane})',
    'row.asks': '질문이 있습니다',
    'row.more': '더 보기',
    'row.open': '열기',
    'row.letGo': '놓아 주기',
    'row.letGoTitle': '이 워커를 놓아 줍니다. 코디네이터 없이 계속 실행됩니다',
    'mate.title': '{name}: {lead}의 팀원 ({pane})',
    'mate.titleInProcess': '{name}: {lead}의 팀원, 팀장의 프로세스 안에서 실행',
    'mate.inProcess': '프로세스 안',
    'cross.workerOf': '{machine}의 {name} 워커',
    'orphan.gone': '⚠ 코디네이터 {pane|이} 사라졌습니다',

    'machine.tag': '⌂ {name}',
    'machine.tagOffline': '⌂ {name} (오프라인)',
    'machine.online': '{name}',
    'machine.offline': '{name|은} 오프라인입니다',
    'machine.noWorkers': '{name|은} 다른 기기의 워커를 받지 않습니다. 그 기기에서 st orch accept-remote on을 실행하세요.',
    'open.offline': '{name|은} 오프라인입니다. 그 장치의 st가 돌아오면 창이 열립니다.',
    'open.noAccept': '{name|은} 지금 다른 기기의 워커를 받지 않고, 받는 동안에만 다른 기기에 창을 엽니다. {name}에서 st orch accept-remote on을 실행하세요.',

    'action.release': '놓아 주기',
    'action.releaseTitle': '이 워커를 놓아 줍니다. 코디네이터 없이 계속 실행됩니다',
    'gate.asks': '{name}의 질문: ',
    'gate.amount': '양: 5M, $20',
    'gate.setAmount': '이 예산으로 계속',
    'prompt.wants': '{name}이(가) {tool} 사용 허락을 구합니다:',
    'prompt.asks': '{name}의 질문:',
    'prompt.allow': '이번만 허용',
    'prompt.deny': '거부',
    'prompt.open': '창 열기',
    'prompt.openTitle': '같은 질문이 에이전트의 창에서도 기다립니다: 거기서 답해도 됩니다',
    'prompt.inWindow': '에이전트의 창에서 답하세요',

    'attn.title': '확인 필요 ({n})',
    'attn.pageTitle': '({n}) st · 확인 필요',
    'attn.permission': '{name|이} 실행 허락을 구합니다',
    'attn.question': '{name}의 질문',
    'attn.gate': '{name|이} 결정을 기다립니다',
    'attn.no-report': '{name|이} 보고 없이 차례를 마쳤습니다',
    'attn.failed': '{name|이} 실패했습니다',
    'attn.paused': '{name|이} 사용 한도에서 멈췄습니다',
    'attn.run-done': '{name}의 워커가 모두 끝났습니다',
    'attn.open': '열기',
    'attn.openTitle': '창 열기',
    'attn.dismiss': '닫기',
    'attn.dismissTitle': '처리했습니다: 목록에서 뺍니다',
    'attn.mark': '확인 필요',
    'attn.askWhy': '이 페이지가 뒤에 있어도 에이전트가 확인을 기다리면 st가 알려 드릴 수 있습니다.',
    'attn.askAllow': '알림 허용',
    'attn.askLater': '나중에',
    'toast.dismissed': '닫았습니다',

    'toast.answered': '“{option}”(으)로 답했습니다',
    'toast.released': '{name|을} 놓아 주었습니다',
    'toast.adopting': '{lead|이} {name|을} 데려오는 중…',
    'toast.adopted': '{name|은} 이제 {lead}의 워커입니다',
    'toast.stSays': 'st의 답: {why}',
    'toast.noAnswer': 'st가 답하지 않았습니다: {why}',

    'detail.label': '팀원 또는 서브에이전트',
    'detail.kind': '종류',
    'detail.state': '상태',
    'detail.parent': '부모',
    'detail.started': '시작',
    'detail.path': '경로',
    'detail.pane': 'pane',
    'detail.inLead': ' (팀장의 프로세스 안)',
    'detail.ago': '{time} ({dur} 전)',
    'detail.openPane': '그 pane 열기',
    'path.main': 'Main',
  },
};

// pickLang is the first of the browser's languages that the catalogue
// has (ko-KR is ko), else English.
export function pickLang(langs) {
  for (const l of langs || []) {
    const base = String(l).toLowerCase().split('-')[0];
    if (Object.hasOwn(CATALOGUE, base)) return base;
  }
  return 'en';
}

export const LANG = pickLang(navigator.languages && navigator.languages.length ? navigator.languages : [navigator.language]);

const plurals = new Intl.PluralRules(LANG);

// t is the text of key in the page's language (English when that
// language lacks it), with params put in its {placeholders}.
export function t(key, params = {}) {
  let text = CATALOGUE[LANG][key] ?? CATALOGUE.en[key];
  if (text === undefined) return key;
  if (typeof text === 'object') text = text[plurals.select(Number(params.n))] ?? text.other;
  return text.replace(/\{(\w+)(?:\|([^}]+))?\}/g, (_, name, particle) => {
    const v = params[name] === undefined || params[name] === null ? '' : String(params[name]);
    return particle ? v + josa(v, particle) : v;
  });
}

// The Korean particles that change with the word before them: the first
// of each pair follows a final consonant (받침), the second a vowel.
const PARTICLES = [['은', '는'], ['이', '가'], ['을', '를'], ['과', '와'], ['으로', '로']];

// josa is the form of particle (either of its pair) that follows word.
// A Korean word's last syllable says it; a digit is read in Korean; a
// word in Latin letters is read as Koreans read it: an initialism by its
// letters' names (L, M, N, R end on a consonant), a word by how it ends
// (-m, -n, -ng, -l, and a short vowel before -c, -k, -p, -t: "Mac" is 맥,
// "book" 북). A guess for a name it cannot know, never wrong for Korean.
export function josa(word, particle) {
  const pair = PARTICLES.find((p) => p.includes(particle)) || [particle, particle];
  const w = String(word).trim();
  const last = w.slice(-1);
  let final;
  const code = last.charCodeAt(0);
  if (code >= 0xac00 && code <= 0xd7a3) {
    const jong = (code - 0xac00) % 28;
    // 으로/로: a final ㄹ takes 로.
    final = pair[0] === '으로' ? jong !== 0 && jong !== 8 : jong !== 0;
  } else if (/[0-9]/.test(last)) {
    final = '0136780'.includes(last) && !(pair[0] === '으로' && '178'.includes(last));
  } else if (/[A-Z]{1,4}$/.test(w) && !/[a-z]/.test(w.slice(-5))) {
    final = 'LMNR'.includes(last) && !(pair[0] === '으로' && 'LR'.includes(last));
  } else {
    const lw = w.toLowerCase();
    final = /(m|n|ng)$/.test(lw) || (/l$/.test(lw) && pair[0] !== '으로') || /(^|[^aeiou])(oo|[aeiou])(c|k|ck|p|t)$/.test(lw);
  }
  return final ? pair[0] : pair[1];
}

// fmtDur is a span of time, as "4m 12s".
export function fmtDur(ms) {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return t('dur.s', { s });
  const m = Math.floor(s / 60);
  if (m < 60) return t('dur.ms', { m, s: s % 60 });
  const h = Math.floor(m / 60);
  if (h < 24) return t('dur.hm', { h, m: m % 60 });
  return t('dur.dh', { d: Math.floor(h / 24), h: h % 24 });
}

// fmtShort is the largest unit only, for rows where room is short.
export function fmtShort(ms) {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return t('short.s', { n: s });
  if (s < 3600) return t('short.m', { n: Math.floor(s / 60) });
  if (s < 86400) return t('short.h', { n: Math.floor(s / 3600) });
  return t('short.d', { n: Math.floor(s / 86400) });
}

// fmtCount is a count in short units in the page's language (12.3K,
// 1.2만); fmtUSD a sum of dollars (a cost).
export function fmtCount(n) {
  return new Intl.NumberFormat(LANG, { notation: 'compact', maximumFractionDigits: 1 }).format(n);
}
export function fmtUSD(v) {
  return new Intl.NumberFormat(LANG, { style: 'currency', currency: 'USD', minimumFractionDigits: 2, maximumFractionDigits: 2 }).format(v);
}

// fmtTime is a time of day in the page's language.
export function fmtTime(d) {
  return new Date(d).toLocaleTimeString(LANG);
}

// translatePage fills the page's own elements: data-i18n is an element's
// text, data-i18n-title and data-i18n-aria-label its attributes.
export function translatePage(root) {
  root.documentElement.lang = LANG;
  for (const e of root.querySelectorAll('[data-i18n]')) e.textContent = t(e.dataset.i18n);
  for (const e of root.querySelectorAll('[data-i18n-title]')) e.title = t(e.dataset.i18nTitle);
  for (const e of root.querySelectorAll('[data-i18n-aria-label]')) e.setAttribute('aria-label', t(e.dataset.i18nAriaLabel));
}
