/**
 * The group as a person reads it (`se-bridge fleet status`, `se-bridge status`): its slots and who
 * holds them, its members, and, for anything held, exactly what holds it: the slots' holders, the
 * members not healthy that count as down (and until when), the members left out of the count, the
 * queue, a collision foretold and why it is one. Every text a record brings is shown as text
 * (`visible`): a record is untrusted, and nothing in it may forge a line of the terminal.
 */
import { calendarNowText } from '../../calendar/calendar.ts';
import { visible } from '../../present/text-line.ts';
import type { GroupStatus } from './group.ts';
import type { MemberEvent } from './records.ts';
import { countedText } from './parse.ts';
import { pauseText, type PauseState } from './pause.ts';

type Member = GroupStatus['members'][number];

/** plural: `n thing` or `n things`. */
const plural = (n: number, thing: string): string => `${n} ${thing}${n === 1 ? '' : 's'}`;

/** heldText: an approval the budget holds, in words: what holds it, since when. */
export function heldText(held: NonNullable<MemberEvent['held']>): string {
  const why = [
    ...(held.by.length > 0 ? [`${held.by.length === 1 ? 'slot' : 'slots'} held by ${held.by.map(visible).join(', ')}`] : []),
    ...(held.unhealthy ?? []).map((u) => `${visible(u.vm)} not healthy since ${visible(u.since)}, counted as down`),
    ...(held.ahead ? [`${held.ahead} ahead in the queue`] : []),
  ];
  if (held.next !== undefined)
    return `held by the group's rate (the next early approval may come at ${visible(held.next)}) since ${visible(held.since)}`;
  return `held by the budget (${why.join('; ') || 'waiting its turn for a free slot'}) since ${visible(held.since)}`;
}

/** pausedText: the group's pause, in words: no early approval while it holds, and for the breaker the members that did not come back. */
export function pausedText(group: string, p: PauseState): string {
  const members = p.members === undefined ? '' : `; not back: ${p.members.map(visible).join(', ')}`;
  return `PAUSED: ${visible(pauseText(group, p))}${members}. No early approval in the group but a forced one; se-bridge fleet resume ends it.`;
}

/** unavailableText: a member not healthy, whether it counts, in words. */
function unavailableText(u: NonNullable<Member['unavailable']>): string {
  return `not healthy since ${visible(u.since)} (${visible(u.why)}); ${u.counts ? `counts as down until ${u.countsUntil}` : `left out of the count since ${u.countsUntil}`}`;
}

/** groupText: the group as a person reads it. */
export function groupText(g: GroupStatus, table: (header: string[], rows: string[][]) => string): string {
  const how = g.counted === null ? '' : ` (${g.counted})`;
  const budget = g.maxUnavailable === null ? 'no budget' : `${g.slots.length} of ${plural(g.maxUnavailable, 'slot')} held${how}`;
  const out = [`Group ${visible(g.group)}: ${budget}; ${plural(g.members.length, 'member')} (${visible(g.store)})`];
  if (g.pause !== null) out.push(pausedText(g.group, g.pause));
  if (g.slots.length > 0)
    out.push(
      '',
      table(
        ['SLOT', 'VM', 'EVENT ID', 'SINCE', 'UNTIL', 'WHY'],
        g.slots.map((s) => [s.slot, s.vm, s.eventId ?? '-', s.since ?? '-', s.until ?? '-', s.mode ?? '-'].map(visible)),
      ),
    );
  const withHealth = g.members.some((m) => m.health !== undefined);
  const withCalendar = g.members.some((m) => m.calendar !== undefined);
  if (g.members.length > 0)
    out.push(
      '',
      table(
        ['MEMBER', 'SLOT', 'EVENTS', 'HEARTBEAT', ...(withHealth ? ['HEALTH'] : []), ...(withCalendar ? ['EARLY APPROVAL'] : [])],
        g.members.map((m) => [
          visible(m.vm),
          m.holdsSlot ? 'yes' : '-',
          m.events
            .map(
              (e) =>
                `${visible(e.eventType)} ${visible(e.status)}${e.notBefore ? ` not before ${visible(e.notBefore)}` : ''}${e.held ? `, ${heldText(e.held)}` : ''}`,
            )
            .join('; ') || '-',
          `${visible(m.heartbeatAt)}${m.stale ? ' (stopped)' : ''}`,
          ...(withHealth ? [m.unavailable ? unavailableText(m.unavailable) : healthText(m.health)] : []),
          ...(withCalendar ? [m.calendar === undefined ? 'no calendar' : visible(calendarNowText(m.calendar))] : []),
        ]),
      ),
    );
  const counted = g.members.filter((m) => m.unavailable?.counts === true);
  if (counted.length > 0)
    out.push(
      '',
      `Not healthy, so counted as down without a slot: ${counted.map((m) => `${visible(m.vm)} (since ${visible(m.unavailable!.since)}, until ${m.unavailable!.countsUntil})`).join(', ')}.`,
    );
  for (const m of g.members.filter((x) => x.unavailable?.counts === false))
    out.push(
      '',
      `Left out of the count: ${visible(m.vm)}, not healthy since ${visible(m.unavailable!.since)} (${visible(m.unavailable!.why)}), no longer counts since ${m.unavailable!.countsUntil} (unhealthyCountsForSeconds: ${g.unhealthyCountsForSeconds}). If it is gone for good: se-bridge fleet forget ${visible(m.vm)}`,
    );
  const digests = new Set(g.members.map((m) => m.calendar?.digest ?? 'none'));
  if (withCalendar && digests.size > 1)
    out.push(
      '',
      `The members' calendars differ (${digests.size} kinds, by digest): every member of a group should name the same fleet.calendar.`,
    );
  for (const s of g.skipped)
    out.push(
      '',
      s.holder === undefined
        ? `Record ${visible(s.key)} left out: ${visible(s.why)}.`
        : `Record ${visible(s.key)} does not read (${visible(s.why)}): ${visible(countedText(s.holder))}.`,
    );
  for (const u of g.unread) out.push('', `Could not read ${u.what}: ${visible(u.why)}.`);
  if (g.collision !== null) out.push('', collisionText(g, g.collision));
  return `${out.join('\n')}\n`;
}

/** collisionText: a collision foretold, and why it is one: who is due when, the members not healthy counted as down, and what the group allows. */
function collisionText(g: GroupStatus, c: NonNullable<GroupStatus['collision']>): string {
  const n = c.vms.length;
  const due = c.due.map((d) => `${visible(d.vm)}: ${visible(d.eventType)} not before ${d.notBefore}`).join('; ');
  const sick = c.unhealthy.map(visible);
  const also = sick.length === 0 ? '' : `, while ${sick.join(', ')} ${sick.length === 1 ? 'is' : 'are'} not healthy and counted as down`;
  return `Collision foretold: ${n} of ${visible(g.group)}'s ${plural(g.members.length, 'member')} ${n === 1 ? 'is' : 'are'} due for maintenance between ${c.from} and ${c.to} (${due})${also}: ${n + sick.length} down at once, and the group allows ${g.maxUnavailable}.`;
}

/** healthText: a member's health as a person reads it. */
const healthText = (h: Member['health']): string =>
  h === undefined ? '-' : `${h.healthy ? 'healthy' : `not healthy (${visible(h.detail ?? 'no detail')})`} since ${visible(h.since)}`;
