/**
 * The fleet digest as people read it in chat: what is coming in the next hours, group by group —
 * how many maintenances and of what kind, from when to when, how many are held (by the budget, by
 * the calendar, by a pause), approved, started or unwatched, the collision a group faces, and its
 * budget against the members down or unhealthy. The model (made by fleet/view/digest.ts), its
 * words, and its Slack Block Kit and Teams Adaptive Card forms. Every name in it (a group, a
 * person, a reason) comes from a store every member may write: in Slack it is escaped and
 * verbatim, in Teams a TextRun, so it never becomes a mention or a link.
 */
import { truncate, utcText, type Severity } from './chat-model.ts';
import { escape, headerBlock, ICON, LIMITS, type SlackPayload } from './slack-blocks.ts';
import { cardOf, isoSeconds, rich, run, STYLE, workflowMessage } from './teams-card.ts';

export interface DigestGroup {
  /** The group, or null for the VMs Azure lists that no member record names. */
  readonly group: string | null;
  /** The pending maintenances that begin within the digest's hours (or are under way). */
  readonly count: number;
  /** How many of each event type, most first. */
  readonly types: readonly { readonly type: string; readonly count: number }[];
  /** The earliest and latest NotBefore among them (ISO), null when none has one. */
  readonly first: string | null;
  readonly last: string | null;
  /** How many are in each state (scheduled, held by the budget, held by the calendar, approved, started, unwatched). */
  readonly states: Readonly<Record<string, number>>;
  readonly maxUnavailable: number | null;
  /** Members down now (slots held) and members not healthy that count as down. */
  readonly down: number;
  readonly unhealthy: number;
  readonly stale: number;
  readonly pause: { readonly by: string; readonly why: string; readonly until: string | null } | null;
  /** More members due at once than the budget allows: from when, and how many. */
  readonly collision: { readonly from: string; readonly due: number } | null;
  /** The blackout its members' calendar is in now, when one holds its events. */
  readonly blackout: { readonly name: string; readonly until: string | null } | null;
}

export interface FleetDigest {
  /** When it was made (ISO). */
  readonly at: string;
  readonly hours: number;
  /** The end of its span (ISO). */
  readonly until: string;
  readonly total: number;
  readonly groups: readonly DigestGroup[];
  /** What the relay could not read (the store did not answer): a digest never says "nothing" for "unknown". */
  readonly unread: readonly string[];
  /** The console's address, when configured, for "open the timeline". */
  readonly consoleUrl: string | null;
  /** A digest of everything it says but `at`: the same key, the same message. */
  readonly key: string;
}

/** The states a digest counts, in the order it says them. */
export const DIGEST_STATES = ['started', 'approved', 'held by the budget', 'held by the calendar', 'unwatched', 'scheduled'] as const;

/** The words of a digest: a title, a line per group (its name and what it says), and how urgent it reads. */
export interface DigestWords {
  readonly title: string;
  readonly severity: Severity;
  readonly lines: readonly { readonly group: string; readonly text: string }[];
  readonly footer: string;
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
const hhmm = (iso: string) => utcText(iso).slice(11);

/** groupText: one group's line, in plain words. */
function groupText(g: DigestGroup): string {
  const parts: string[] = [];
  if (g.count > 0) {
    const types = g.types.map((t) => `${t.count} ${t.type}`).join(', ');
    const span = g.first === null ? '' : g.first === g.last ? ` at ${utcText(g.first)}` : ` from ${utcText(g.first)} to ${hhmm(g.last!)}`;
    const states = DIGEST_STATES.filter((s) => (g.states[s] ?? 0) > 0).map((s) => `${g.states[s]} ${s}`);
    parts.push(`${plural(g.count, 'maintenance')} (${types})${span}: ${states.join(', ')}`);
  } else parts.push('nothing scheduled');
  if (g.maxUnavailable !== null)
    parts.push(`budget ${g.maxUnavailable}: ${g.down} down${g.unhealthy > 0 ? `, ${g.unhealthy} not healthy` : ''}`);
  if (g.collision !== null) parts.push(`collision from ${utcText(g.collision.from)}: ${g.collision.due} due at once`);
  if (g.pause !== null)
    parts.push(`paused by ${g.pause.by}${g.pause.until === null ? '' : ` until ${utcText(g.pause.until)}`}: ${g.pause.why}`);
  if (g.blackout !== null)
    parts.push(`in the blackout ${g.blackout.name}${g.blackout.until === null ? '' : ` until ${utcText(g.blackout.until)}`}`);
  if (g.stale > 0) parts.push(`${plural(g.stale, 'member')} silent`);
  return parts.join(' · ');
}

/** digestWords: the digest in plain words. */
export function digestWords(d: FleetDigest): DigestWords {
  const within = `in the next ${d.hours} h`;
  const groups = d.groups.filter((g) => g.group !== null).length;
  const unwatched = d.groups.reduce((n, g) => n + (g.states.unwatched ?? 0), 0);
  const held = d.groups.reduce((n, g) => n + (g.states['held by the budget'] ?? 0) + (g.states['held by the calendar'] ?? 0), 0);
  const title =
    d.unread.length > 0
      ? `Fleet maintenance ${within}: unknown, the fleet store could not be read`
      : d.total === 0
        ? `Fleet maintenance ${within}: nothing scheduled`
        : `Fleet maintenance ${within}: ${d.total} in ${plural(groups, 'group')}${held > 0 ? `, ${held} held` : ''}${unwatched > 0 ? `, ${unwatched} unwatched` : ''}`;
  const severity: Severity =
    d.unread.length > 0 || unwatched > 0 || d.groups.some((g) => g.collision !== null) ? 'high' : d.total > 0 ? 'warning' : 'resolved';
  const lines = [
    ...d.groups.map((g) => ({ group: g.group ?? 'no member record', text: groupText(g) })),
    ...d.unread.map((u) => ({ group: 'not read', text: u })),
  ];
  return { title, severity, lines, footer: `As of ${utcText(d.at)}, until ${utcText(d.until)}` };
}

/** digestText: the digest as lines of text (the CLI and the stdout of `fleet digest`). */
export function digestText(d: FleetDigest): string {
  const w = digestWords(d);
  return [w.title, ...w.lines.map((l) => `  ${l.group}: ${l.text}`), w.footer, ...(d.consoleUrl ? [`Timeline: ${d.consoleUrl}`] : [])].join(
    '\n',
  );
}

/** The most groups a message lists (Block Kit allows 50 blocks; a digest stays readable). */
const MOST_LINES = 40;

/** digestSlack: the digest as Block Kit: a header, a section per group, and a context line. */
export function digestSlack(d: FleetDigest): SlackPayload {
  const w = digestWords(d);
  const lines = w.lines.slice(0, MOST_LINES);
  const more = w.lines.length - lines.length;
  const blocks: Record<string, unknown>[] = [
    headerBlock(w.severity, w.title),
    ...lines.map((l) => ({
      type: 'section',
      // each line shortened as Teams' are: a member writes each text up to 1 KiB, and forty of them would make a message of 100 KB
      text: {
        type: 'mrkdwn',
        text: truncate(`*${escape(truncate(l.group, 100))}*: ${escape(truncate(l.text, 600))}`, LIMITS.text),
        verbatim: true,
      },
    })),
  ];
  const footer = `${ICON[w.severity]} ${escape(w.footer)}${more > 0 ? ` · ${more} more groups` : ''}`;
  blocks.push({ type: 'context', elements: [{ type: 'mrkdwn', text: truncate(footer, LIMITS.text), verbatim: true }] });
  if (d.consoleUrl !== null)
    blocks.push({
      type: 'actions',
      block_id: 'se_bridge_digest',
      elements: [
        { type: 'button', action_id: 'se_bridge_timeline', text: { type: 'plain_text', text: 'Open the timeline' }, url: d.consoleUrl },
      ],
    });
  return { text: truncate(escape(w.title), LIMITS.fallback), blocks };
}

/** A Teams message is at most 28 KB: a card's lines, each shortened, stop at this many bytes (a member writes each text up to 1 KiB). */
const TEAMS_LINE_BYTES = 20_000;

/** teamsLines: a RichTextBlock a line, each shortened, while they fit in TEAMS_LINE_BYTES, then how many more there are. */
function teamsLines(lines: DigestWords['lines']): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  let bytes = 0;
  for (const l of lines.slice(0, MOST_LINES)) {
    const block = rich([run(`${truncate(l.group, 100)}: `, { weight: 'Bolder' }), run(truncate(l.text, 600))]);
    bytes += Buffer.byteLength(JSON.stringify(block));
    if (bytes > TEAMS_LINE_BYTES) break;
    out.push(block);
  }
  const more = lines.length - out.length;
  return more > 0 ? [...out, rich([run(`${more} more groups`, { isSubtle: true })])] : out;
}

/** digestTeams: the digest as a Teams message whose attachment is an Adaptive Card. */
export function digestTeams(d: FleetDigest): Record<string, unknown> {
  const w = digestWords(d);
  const s = STYLE[w.severity];
  const body: Record<string, unknown>[] = [
    {
      type: 'Container',
      style: s.container,
      bleed: true,
      items: [rich([run(w.title, { weight: 'Bolder', size: 'Large', color: s.color })])],
    },
    ...teamsLines(w.lines),
    {
      type: 'TextBlock',
      text: `As of {{DATE(${isoSeconds(d.at)}, SHORT)}} {{TIME(${isoSeconds(d.at)})}}, for ${d.hours} h`,
      isSubtle: true,
      size: 'Small',
      wrap: true,
    },
  ];
  const actions = d.consoleUrl === null ? [] : [{ type: 'Action.OpenUrl', title: 'Open the timeline', url: d.consoleUrl }];
  return workflowMessage(cardOf(body, actions));
}
