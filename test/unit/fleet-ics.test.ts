/**
 * The calendar feed's file, read back by an iCalendar parser we did not write (ical.js): what a
 * member or Azure wrote comes back as the same text, however it is made, every line within 75
 * octets, and an entry's UID stays the same while its state changes.
 */
import ICAL from 'ical.js';
import { describe, expect, it } from 'vitest';
import { calendarOf, fold, stateOf, text, uidOf } from '../../src/fleet/view/ics.ts';
import type { FleetEvent } from '../../src/fleet/view/events.ts';

const READ_AT = Date.parse('2026-11-30T10:00:30Z');

const event = (over: Partial<FleetEvent> = {}): FleetEvent => ({
  ...{ group: 'web', vm: 'vm-1', resourceId: null, eventId: 'E1', eventType: 'Reboot', status: 'Scheduled' },
  ...{ notBefore: '2026-11-30T11:00:00.000Z', durationInSeconds: -1, member: 'fresh', heartbeatAt: '2026-11-30T10:00:00.000Z' },
  ...over,
});

/** parse: the VEVENTs of a file, as ical.js reads them. */
function parse(ics: string) {
  const cal = new ICAL.Component(ICAL.parse(ics));
  return cal.getAllSubcomponents('vevent').map((v) => {
    const e = new ICAL.Event(v);
    return {
      uid: e.uid,
      summary: e.summary,
      description: e.description,
      start: e.startDate.toJSDate().toISOString(),
      end: e.endDate.toJSDate().toISOString(),
      status: String(v.getFirstPropertyValue('status')),
      categories: v.getFirstProperty('categories')?.getValues() as string[],
    };
  });
}

describe('the calendar feed (iCalendar)', () => {
  it('an event from NotBefore for its duration, an unknown duration as 15 minutes, Started at the minute it was read', () => {
    const file = calendarOf(
      [
        event(),
        event({ eventId: 'E2', vm: 'vm-2', durationInSeconds: 300, approval: { by: 'ops', via: 'api', at: '2026-11-30T10:00:00Z' } }),
        event({ eventId: 'E3', vm: 'vm-3', status: 'Started', notBefore: null }),
      ],
      READ_AT,
      null,
    );
    const [a, b, c] = parse(file);
    expect(a).toMatchObject({ start: '2026-11-30T11:00:00.000Z', end: '2026-11-30T11:15:00.000Z', status: 'TENTATIVE' });
    expect(a!.summary).toBe('Reboot vm-1 (web): scheduled');
    expect(a!.categories).toEqual(['web', 'Reboot']);
    expect(a!.description).toContain('Duration: unknown (shown as 15 minutes)');
    expect(b).toMatchObject({ end: '2026-11-30T11:05:00.000Z', status: 'CONFIRMED' });
    expect(b!.description).toContain('Approved by ops via api');
    expect(c).toMatchObject({ start: '2026-11-30T10:00:00.000Z', end: '2026-11-30T10:15:00.000Z', status: 'CONFIRMED' });
    expect(new Set([a!.uid, b!.uid, c!.uid]).size).toBe(3);
  });

  it('text a member wrote comes back whole, and no line is over 75 octets', () => {
    const nasty = 'web, db; cache\\ "x"\nline two\r\nthree 🚀 ' + 'é'.repeat(80) + '\u0007END:VEVENT';
    const file = calendarOf([event({ group: nasty, vm: 'vm;1,2' })], READ_AT, nasty);
    for (const line of file.split('\r\n')) expect(Buffer.byteLength(line)).toBeLessThanOrEqual(75);
    const [e] = parse(file);
    // the bell is dropped and a CRLF is one line break; nothing else is lost, and nothing in it starts a property
    const back = nasty.replace('\u0007', '').replace('\r\n', '\n');
    expect(e!.summary).toBe(`Reboot vm;1,2 (${back}): scheduled`);
    expect(e!.categories).toEqual([back, 'Reboot']);
    expect(file.match(/^END:VEVENT$/gm)).toHaveLength(1);
    expect(text('a,b;c\\d\ne')).toBe('a\\,b\\;c\\\\d\\ne');
  });

  it('folds between characters, never inside one', () => {
    const line = `SUMMARY:${'🚀'.repeat(40)}`;
    const folded = fold(line);
    expect(folded.split('\r\n ').join('')).toBe(line);
    for (const part of folded.split('\r\n')) expect(Buffer.byteLength(part)).toBeLessThanOrEqual(75);
  });

  it('one UID per event of a VM whatever its state, the VM compared without case', () => {
    expect(uidOf({ eventId: 'E1', vm: 'VM-1' })).toBe(uidOf({ eventId: 'E1', vm: 'vm-1' }));
    expect(uidOf({ eventId: 'E1', vm: 'vm-1' })).not.toBe(uidOf({ eventId: 'E1', vm: 'vm-2' }));
    const held = event({ held: { since: '2026-11-30T10:00:00Z', by: ['vm-9'], ahead: 2 } });
    const [before, after] = [parse(calendarOf([event()], READ_AT, 'web'))[0]!, parse(calendarOf([held], READ_AT, 'web'))[0]!];
    expect(after.uid).toBe(before.uid);
    expect(after.summary).toBe('Reboot vm-1 (web): held by the budget');
    expect(after.description).toContain('Held since 2026-11-30T10:00:00Z by vm-9; 2 ahead in the queue');
  });

  it('names each state as the console does', () => {
    expect(stateOf(event({ unwatched: { why: 'no-member', since: null }, status: 'Started' }))).toBe('unwatched');
    expect(stateOf(event({ status: 'Started' }))).toBe('started');
    const blackout = { name: 'year-end', until: '2027-01-03T00:00:00Z' };
    expect(stateOf(event({ blackout, held: { since: 'x', by: ['vm-2'] } }))).toBe('held by the calendar');
    expect(stateOf(event({ blackout, approval: { by: 'ops', via: 'api', at: 'x' } }))).toBe('approved');
    expect(parse(calendarOf([event({ blackout })], READ_AT, 'web'))[0]!.description).toContain(
      'Blackout: year-end until 2027-01-03T00:00:00Z',
    );
    expect(stateOf(event())).toBe('scheduled');
  });
});
