/**
 * The fleet's coming maintenance as an iCalendar file (RFC 5545) a calendar subscribes to (GET
 * /v1/fleet/calendar.ics): one VEVENT for each pending event of a VM, the rows of GET
 * /v1/fleet/events. Its UID is a digest of the EventId and the VM, the same at every read while
 * the event is pending, so a client that reads the file again updates the entry in place and
 * never shows it twice. Every text a member or Azure wrote is escaped as a TEXT value: nothing in
 * it can end a line or start a property.
 */
import { createHash } from 'node:crypto';
import { UNKNOWN_DURATION_MS } from '../../calendar/conflict.ts';
import type { FleetEvent } from './events.ts';

/** How often a client should read the file again (RFC 7986 REFRESH-INTERVAL, and Outlook's X-PUBLISHED-TTL). */
const REFRESH = 'PT5M';
const CRLF = '\r\n';

/** text: a TEXT value (RFC 5545 3.3.11): backslash, semicolon and comma escaped, a line break as \n, other control characters dropped. */
export const text = (s: string): string =>
  s
    .replace(/[\\;,]/g, (c) => `\\${c}`)
    .replace(/\r\n|\r|\n/g, '\\n')
    // eslint-disable-next-line no-control-regex -- control characters are what this drops
    .replace(/[\u0000-\u001f\u007f]/g, '');

/** utc: a DATE-TIME in UTC, `20261130T101500Z`. */
const utc = (ms: number): string =>
  new Date(ms)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');

/** fold: one content line, folded (RFC 5545 3.1) so no line is over 75 octets, never inside a character. */
export function fold(line: string): string {
  const lines: string[] = [];
  let [current, octets] = ['', 0];
  for (const ch of line) {
    const n = Buffer.byteLength(ch);
    // a continuation line starts with the space that marks it
    if (octets + n > (lines.length === 0 ? 75 : 74)) {
      lines.push(current);
      [current, octets] = ['', 0];
    }
    current += ch;
    octets += n;
  }
  lines.push(current);
  return lines.join(`${CRLF} `);
}

/** stateOf: where the event stands, in words, as the console names its states. */
export function stateOf(e: FleetEvent): string {
  if (e.unwatched !== undefined) return 'unwatched';
  if (/^started$/i.test(e.status)) return 'started';
  if (e.approval !== undefined) return 'approved';
  // a blackout holds every early approval, before the budget is asked
  if (e.blackout !== undefined) return 'held by the calendar';
  if (e.held !== undefined) return 'held by the budget';
  return 'scheduled';
}

/** detailOf: what the fleet knows of the event, a fact a line. */
function detailOf(e: FleetEvent, durationMs: number): string[] {
  const h = e.held;
  return [
    `${e.eventType} of ${e.vm}: ${stateOf(e)}`,
    `EventId: ${e.eventId}`,
    `Group: ${e.group ?? 'none (no member record)'}`,
    `Status at Azure: ${e.azure?.status ?? e.status}`,
    e.durationInSeconds > 0 ? `Duration: ${e.durationInSeconds} s` : `Duration: unknown (shown as ${durationMs / 60_000} minutes)`,
    ...(e.approval ? [`Approved by ${e.approval.by} via ${e.approval.via} at ${e.approval.at}`] : []),
    ...(e.blackout ? [`Blackout: ${e.blackout.name}${e.blackout.until ? ` until ${e.blackout.until}` : ''}`] : []),
    ...(h
      ? [`Held since ${h.since}${h.by.length > 0 ? ` by ${h.by.join(', ')}` : ''}${h.ahead ? `; ${h.ahead} ahead in the queue` : ''}`]
      : []),
    ...(e.preparations ?? []).map((p) => `Preparation ${p.sink}: ${p.state}`),
    `Member record: ${e.member}${e.heartbeatAt ? `, heartbeat ${e.heartbeatAt}` : ''}`,
    ...(e.unwatched ? [`Unwatched: ${e.unwatched.why}${e.unwatched.since ? ` since ${e.unwatched.since}` : ''}`] : []),
  ];
}

/** uidOf: the entry's UID, the same at every read for one event of one VM. */
export const uidOf = (e: Pick<FleetEvent, 'eventId' | 'vm'>): string =>
  `${createHash('sha256').update(`${e.eventId}\n${e.vm.toLowerCase()}`).digest('hex').slice(0, 32)}@scheduled-events-bridge`;

/**
 * vevent: one event's entry. It starts at NotBefore; one Started (IMDS empties NotBefore) at the
 * minute the relay read it. It lasts DurationInSeconds, or UNKNOWN_DURATION_MS when unknown, as
 * the calendar's conflicts count it.
 */
function vevent(e: FleetEvent, readAt: number): string[] {
  const notBefore = e.notBefore === null ? NaN : Date.parse(e.notBefore);
  const start = Number.isFinite(notBefore) ? notBefore : Math.floor(readAt / 60_000) * 60_000;
  const durationMs = e.durationInSeconds > 0 ? e.durationInSeconds * 1000 : UNKNOWN_DURATION_MS;
  const state = stateOf(e);
  return [
    'BEGIN:VEVENT',
    `UID:${uidOf(e)}`,
    `DTSTAMP:${utc(readAt)}`,
    `DTSTART:${utc(start)}`,
    `DTEND:${utc(start + durationMs)}`,
    `SUMMARY:${text(`${e.eventType} ${e.vm}${e.group ? ` (${e.group})` : ''}: ${state}`)}`,
    `DESCRIPTION:${text(detailOf(e, durationMs).join('\n'))}`,
    `CATEGORIES:${[e.group ?? 'no group', e.eventType].map(text).join(',')}`,
    `STATUS:${state === 'approved' || state === 'started' ? 'CONFIRMED' : 'TENTATIVE'}`,
    // maintenance of a VM takes nobody's time: it never shows the reader as busy
    'TRANSP:TRANSPARENT',
    'END:VEVENT',
  ];
}

/** calendarOf: the iCalendar file of `events`, as read at `readAt`, named for `group` (or the whole fleet). */
export function calendarOf(events: readonly FleetEvent[], readAt: number, group: string | null): string {
  const name = `Azure maintenance: ${group ?? 'every group'}`;
  const lines = [
    'BEGIN:VCALENDAR',
    'VERSION:2.0',
    'PRODID:-//scheduled-events-bridge//fleet calendar//EN',
    'CALSCALE:GREGORIAN',
    'METHOD:PUBLISH',
    `NAME:${text(name)}`,
    `X-WR-CALNAME:${text(name)}`,
    `REFRESH-INTERVAL;VALUE=DURATION:${REFRESH}`,
    `X-PUBLISHED-TTL:${REFRESH}`,
    ...events.flatMap((e) => vevent(e, readAt)),
    'END:VCALENDAR',
  ];
  return lines.map(fold).join(CRLF) + CRLF;
}
