/**
 * The console's HTML, made on the relay: the sign-in form, the page around the timeline, the
 * timeline itself (sent again whole by the live stream when it changes), and an event's detail.
 * Plain, semantic HTML: a table per group (its members in rows, their maintenance as links in
 * the time column), every state said in words as well as by its colour, every text a record
 * brings escaped. The page's one script only places the bars and keeps the timeline live.
 */
import { documentStart, escapeHtml as h } from '../approval/page.ts';
import type { FleetEvent } from '../fleet/view/events.ts';
import { stateOf } from '../fleet/view/ics.ts';
import { RANGES, type Bar, type Lane, type Range, type Row, type Shade, type Timeline } from './console-timeline.ts';
import type { Person } from './console-session.ts';

/** The CSS class of a state: its colour and pattern. */
const stateClass = (state: string): string => `s-${state.replace(/^held by the /, 'held-').replace(/\s+/g, '-')}`;

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
/** hhmm: a time as the console says it, in UTC with its day: `30 Nov 10:15 UTC`. */
const hhmm = (iso: string): string => `${Number(iso.slice(8, 10))} ${MONTHS[Number(iso.slice(5, 7)) - 1]} ${iso.slice(11, 16)} UTC`;

export const eventHref = (vm: string, eventId: string): string =>
  `/console/event?${new URLSearchParams({ vm, id: eventId }).toString().replaceAll('&', '&amp;')}`;

/** layout: a console page: its own stylesheet and script only (the CSP allows nothing else). */
export function layout(title: string, body: string, script = false): string {
  return `${documentStart(title)}
<link rel="stylesheet" href="/console/app.css">
${script ? '<script src="/console/app.js" defer></script>\n' : ''}</head>
<body>${body}</body>
</html>`;
}

/** signInPage: the form that asks for a console key (`problem`: why the last one was refused). */
export function signInPage(problem: string | null): string {
  return layout(
    'Sign in: fleet console',
    `<main class="narrow"><h1>Fleet console</h1>
${problem === null ? '' : `<p class="problem" role="alert">${h(problem)}</p>`}
<form method="post" action="/console/sign-in">
<p><label for="key">Key</label><br><input id="key" name="key" type="password" autocomplete="current-password" required maxlength="512"></p>
<p><button type="submit">Sign in</button></p>
</form></main>`,
  );
}

/** appPage: the console around `timeline` (its HTML), for `person`. */
export function appPage(person: Person, range: Range, timeline: string): string {
  const nav = (Object.keys(RANGES) as Range[])
    .map((r) => `<a href="/console?range=${r}"${r === range ? ' aria-current="page"' : ''}>${labelOf(r)}</a>`)
    .join(' ');
  const out = person.by === 'key' ? `<form method="post" action="/console/sign-out"><button type="submit">Sign out</button></form>` : '';
  return layout(
    'Fleet console',
    `<header><h1>Fleet console</h1>
<p class="who">${h(person.name)} (${person.role === 'approve' ? 'may approve' : 'read only'})</p>${out}
<nav aria-label="Range">${nav}</nav>
<p id="live" role="status" class="quiet">Connecting…</p>
<p id="said" role="status" aria-live="polite"></p></header>
<main id="timeline" data-range="${range}">${timeline}</main>`,
    true,
  );
}

const labelOf = (r: Range): string => ({ '1h': 'Next hour', '24h': 'Next 24 hours', '7d': 'Next 7 days' })[r];

/** timelineHtml: the timeline's lanes, a table each. */
export function timelineHtml(t: Timeline, canAct: boolean): string {
  const when = new Date(t.readAt).toISOString();
  const head = `<p class="quiet">${t.pending} pending event${t.pending === 1 ? '' : 's'}; the store read at ${hhmm(when)}. ${labelOf(t.range)}, from ${hhmm(new Date(t.from).toISOString())} to ${hhmm(new Date(t.to).toISOString())}.</p>`;
  if (t.lanes.length === 0) return `${head}<p>No group has a member yet.</p>`;
  return head + t.lanes.map((l) => laneHtml(l, t, canAct)).join('\n');
}

function laneHtml(l: Lane, t: Timeline, canAct: boolean): string {
  const name = l.group ?? 'No member record';
  const id = `g-${(l.group ?? 'none').replace(/[^a-z0-9-]/g, '')}`;
  const budget =
    l.maxUnavailable === null
      ? 'No budget (a view only)'
      : `Budget ${l.maxUnavailable} down at once: ${l.down} in maintenance, ${l.unhealthy} unhealthy`;
  const facts = [
    budget,
    `${l.rows.length} member${l.rows.length === 1 ? '' : 's'}${l.stale > 0 ? `, ${l.stale} stale` : ''}`,
    ...(l.pause ? [`<strong>Paused</strong> by ${h(l.pause.by)}: ${h(l.pause.why)}`] : []),
    ...(l.collision ? [`<strong>Collision</strong>: ${l.collision.due} due at ${hhmm(l.collision.from)}, more than the budget`] : []),
    ...shadedFact(l),
  ];
  const marks = `<span class="now" data-at="${t.now.toFixed(4)}" aria-hidden="true"></span>${
    l.collision ? `<span class="collision" data-at="${l.collision.at.toFixed(4)}" aria-hidden="true"></span>` : ''
  }`;
  return `<section class="lane" aria-labelledby="${id}"><h2 id="${id}">${h(name)}</h2>
<p class="facts">${facts.join(' · ')}</p>
<table><thead><tr><th scope="col">Member</th><th scope="col" class="axis"><span class="sr-only">Maintenance, in UTC</span>${ticks(t)}</th></tr></thead><tbody>
${l.rows.map((r) => rowHtml(r, marks, canAct)).join('\n')}
</tbody></table></section>`;
}

/** shadedFact: what the shading of a lane's rows means, when it has any: its blackouts by name, and the time outside the windows. */
function shadedFact(l: Lane): string[] {
  const shades = l.rows.flatMap((r) => r.shades);
  if (shades.length === 0) return [];
  const names = [...new Set(shades.flatMap((s) => (s.kind === 'blackout' && s.name !== null ? [s.name] : [])))];
  const parts = [
    ...(names.length > 0 ? [`hatched, blackout ${names.map(h).join(', ')} (no early approval but a forced one)`] : []),
    ...(shades.some((s) => s.kind === 'closed') ? ['grey, outside the maintenance windows (rules bound to the windows wait)'] : []),
  ];
  return [`Shaded: ${parts.join('; ')}`];
}

/** ticks: the times at each quarter of the range, on the axis. */
const ticks = (t: Timeline): string =>
  [0.25, 0.5, 0.75]
    .map((q) => {
      const iso = new Date(t.from + q * (t.to - t.from)).toISOString();
      return `<span class="tick" data-at="${q}" aria-hidden="true">${hhmm(iso).replace(' UTC', '')}</span>`;
    })
    .join('');

/** approveForm: one click to approve an event (its button named "Approve" and the VM), for a person who may. */
export function approveForm(vm: string, eventId: string, label: string, force = ''): string {
  return `<form method="post" action="/console/approve" class="act"><input type="hidden" name="vm" value="${h(vm)}"><input type="hidden" name="eventId" value="${h(eventId)}">${force}<button type="submit">${h(label)}</button></form>`;
}

function rowHtml(r: Row, marks: string, canAct: boolean): string {
  const notes = [
    ...(r.unwatched ? ['<span class="tag warn">unwatched</span>'] : []),
    ...(r.stale ? ['<span class="tag warn">stale</span>'] : []),
    ...(r.health === 'unhealthy' ? [`<span class="tag bad" title="${h(r.healthDetail ?? '')}">unhealthy</span>`] : []),
    ...(r.holdsSlot ? ['<span class="tag">holds a slot</span>'] : []),
  ];
  // a bar whose words would run into the one before it goes on a line below
  const ends: number[] = [];
  const bars = [...r.bars]
    .sort((a, b) => a.from - b.from)
    .map((b) => {
      let line = ends.findIndex((end) => end <= b.from);
      if (line < 0) line = ends.push(0) - 1;
      ends[line] = b.from + WORDS_SPAN;
      return barHtml(b, line);
    })
    .join('');
  const lines = Math.max(1, ends.length);
  const open = canAct ? r.bars.filter((b) => b.approvable) : [];
  const acts = open
    .map((b) => approveForm(b.vm, b.eventId, open.length > 1 ? `Approve ${r.vm}: ${b.eventType}` : `Approve ${r.vm}`))
    .join('');
  const shades = r.shades.map(shadeHtml).join('');
  return `<tr><th scope="row">${h(r.vm)} ${notes.join(' ')}${acts}</th><td class="track" data-lines="${lines}">${shades}${marks}${bars || '<span class="sr-only">nothing planned</span>'}</td></tr>`;
}

/** shadeHtml: a stretch its calendar holds early approval in, behind the bars: hatched (a blackout) or grey (outside the windows), and said in words. */
function shadeHtml(s: Shade): string {
  const what = s.kind === 'blackout' ? `Blackout ${s.name ?? ''}` : 'Outside the maintenance windows';
  const words = `${what}, from ${hhmm(s.startsAt)} to ${hhmm(s.endsAt)}`;
  return `<span class="shade ${s.kind}" data-from="${s.from.toFixed(4)}" data-to="${s.to.toFixed(4)}" title="${h(words)}"><span class="sr-only">${h(words)}</span></span>`;
}

/** How much of the range a bar's words take, about: another bar starting within it goes on the next line. */
const WORDS_SPAN = 0.2;

const ENDED = new Set(['completed', 'canceled']);

function barHtml(b: Bar, line: number): string {
  const span = `from ${hhmm(b.startsAt)} to ${hhmm(b.endsAt)}${b.durationKnown ? '' : ' (duration unknown)'}`;
  // the mark is as long as the maintenance (the script sizes it); the words follow it, whatever its length
  // an event that ended has no page of its own: its records are gone with it
  const [tag, href] = ENDED.has(b.state) ? ['span', ''] : ['a', ` href="${eventHref(b.vm, b.eventId)}"`];
  return `<${tag} class="bar ${stateClass(b.state)}"${href} data-from="${b.from.toFixed(4)}" data-to="${b.to.toFixed(4)}" data-line="${line}" title="${h(`${b.eventType}, ${b.state}, ${span}`)}"><span class="mark" aria-hidden="true"></span><span class="words">${h(b.eventType)}: ${h(b.state)}</span><span class="sr-only">, ${h(span)}</span></${tag}>`;
}

/** unreadHtml: the store could not be read (`why`), said where the timeline would be. */
export const unreadHtml = (why: string): string => `<p class="problem" role="alert">The fleet store could not be read: ${h(why)}</p>`;

/** problemPage: a request the console refuses, in words. */
export function problemPage(err: { readonly status: number; readonly message: string }): string {
  const heading = ({ 400: 'Bad request', 401: 'Sign in first', 403: 'Refused', 404: 'Not found' } as Record<number, string>)[err.status];
  return layout(
    'Fleet console',
    `<main class="narrow"><h1>${heading ?? 'Refused'}</h1><p>${h(err.message)}</p><p><a href="/console">The console</a></p></main>`,
  );
}

/** eventPage: one event of one VM, what the fleet knows of it. */
export function eventPage(e: FleetEvent, canAct: boolean): string {
  const facts: [string, string][] = [
    ['State', stateOf(e)],
    ['Group', e.group ?? 'none (no member record)'],
    ['EventId', e.eventId],
    ['Status', e.status],
    ['Not before', e.notBefore ?? 'none (under way)'],
    ['Duration', e.durationInSeconds > 0 ? `${e.durationInSeconds} s` : 'unknown'],
    ['Member record', `${e.member}${e.heartbeatAt ? `, last heartbeat ${e.heartbeatAt}` : ''}`],
    ...(e.approval ? [['Approved', `by ${e.approval.by} via ${e.approval.via} at ${e.approval.at}`] as [string, string]] : []),
    ...(e.blackout ? [['Blackout', `${e.blackout.name}${e.blackout.until ? ` until ${e.blackout.until}` : ''}`] as [string, string]] : []),
    ...(e.held ? [['Held', heldText(e.held)] as [string, string]] : []),
    ...(e.preparations ?? []).map((p): [string, string] => [`Preparation ${p.sink}`, p.state]),
    ...(e.azure ? [['Azure says', `${e.azure.status} (${e.azure.source}, ${e.azure.updatedAt})`] as [string, string]] : []),
    ...(e.unwatched
      ? [['Unwatched', `${e.unwatched.why}${e.unwatched.since ? ` since ${e.unwatched.since}` : ''}`] as [string, string]]
      : []),
  ];
  const story = transitionsOf(e);
  return layout(
    `${e.eventType} of ${e.vm}`,
    `<main class="narrow"><p><a href="/console">Back to the timeline</a></p><h1>${h(`${e.eventType} of ${e.vm}`)}</h1>
<dl>${facts.map(([k, v]) => `<dt>${h(k)}</dt><dd>${h(v)}</dd>`).join('')}</dl>${
      story.length === 0
        ? ''
        : `<h2>What happened</h2><ol class="story">${story.map(([at, what]) => `<li><time datetime="${h(at)}">${h(hhmm(at))}</time> ${h(what)}</li>`).join('')}</ol>`
    }${
      canAct && /^scheduled$/i.test(e.status) && e.approval === undefined ? approveForm(e.vm, e.eventId, `Approve ${e.vm}`, FORCE) : ''
    }<p id="said" role="status" aria-live="polite"></p></main>`,
    true,
  );
}

/**
 * transitionsOf: what happened to the event, in order, each with its time: listed and Started as
 * its member first saw them, held by the budget, approved (by whom, how), what Azure's feed said
 * last and when the relay found nobody watching; only what the records say, with a time that reads.
 */
export function transitionsOf(e: FleetEvent): [string, string][] {
  const all: [string | undefined, string][] = [
    [e.seen?.scheduled, 'listed by its member (Scheduled)'],
    [e.held?.since, 'held by the budget'],
    [e.approval?.at, `approved by ${e.approval?.by ?? ''} via ${e.approval?.via ?? ''}`],
    [e.seen?.started, 'Started, as its member saw it'],
    [e.azure?.updatedAt, `Azure's feed: ${e.azure?.status ?? ''} (${e.azure?.source ?? ''})`],
    [e.unwatched?.since ?? undefined, `unwatched: ${e.unwatched?.why ?? ''}`],
  ];
  return all
    .filter((x): x is [string, string] => x[0] !== undefined && Number.isFinite(Date.parse(x[0])))
    .map(([at, what]): [string, string] => [new Date(Date.parse(at)).toISOString(), what])
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}

/** The way past the budget or a blackout: a person's explicit choice, with a reason on the record. */
const FORCE = `<details><summary>Force past the group's budget or a blackout</summary>
<p><label><input type="checkbox" name="force"> Approve even if the budget or the calendar holds it</label></p>
<p><label for="reason">Reason (required to force, kept on the record)</label><br><textarea id="reason" name="reason" maxlength="2000" rows="3"></textarea></p>
</details>`;

/** saidPage: what came of an approval from the console. */
export function saidPage(said: { readonly status: number; readonly heading: string; readonly message: string }): string {
  return layout(
    `${said.heading}: fleet console`,
    `<main class="narrow"><h1>${h(said.heading)}</h1><p role="status" class="${said.status < 300 ? 'done' : 'problem'}">${h(said.message)}</p><p><a href="/console">Back to the timeline</a></p></main>`,
  );
}

const heldText = (held: NonNullable<FleetEvent['held']>): string =>
  [
    `since ${held.since}`,
    ...(held.by.length > 0 ? [`the slots are held by ${held.by.join(', ')}`] : []),
    ...(held.unhealthy && held.unhealthy.length > 0 ? [`not healthy: ${held.unhealthy.map((u) => u.vm).join(', ')}`] : []),
    ...(held.ahead ? [`${held.ahead} ahead in the queue`] : []),
    ...(held.next ? [`the rate allows the next at ${held.next}`] : []),
  ].join('; ');
