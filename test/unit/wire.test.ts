import { describe, expect, it } from 'vitest';
import { parseNotBefore, toDomainDocument, WireDocument } from '../../src/imds/wire.ts';
import { fixtureDocument, fixtureText } from '../helpers.ts';

describe('parseNotBefore', () => {
  it.each([
    ['Mon, 11 Apr 2022 22:26:58 GMT', '2022-04-11T22:26:58Z'],
    ['Thu, 22 Jul 2021 04:50:17 GMT', '2021-07-22T04:50:17Z'],
    ['Thu, 22 Jul 2021 04:50:17 +0200', '2021-07-22T02:50:17Z'],
    ['2025-07-14T10:15:00Z', '2025-07-14T10:15:00Z'],
    ['2025-07-14T10:15:00.250Z', '2025-07-14T10:15:00.250Z'],
    ['2025-07-14T10:15:00', '2025-07-14T10:15:00Z'],
    ['2025-07-14 10:15:00', '2025-07-14T10:15:00Z'],
    ['2025-07-14T12:15:00+02:00', '2025-07-14T10:15:00Z'],
    ['', null],
    ['   ', null],
    [undefined, null],
    ['tomorrow at noon', null],
    ['Mon, 99 Foo 2022 22:26:58 GMT', null],
    ['2025-13-45T99:99:99Z', null],
    // impossible dates are null, never rolled over into other dates
    ['Mon, 31 Feb 2026 10:00:00 GMT', null],
    ['Sun, 29 Feb 2026 10:00:00 GMT', null],
    ['Thu, 29 Feb 2024 10:00:00 GMT', '2024-02-29T10:00:00Z'],
    ['Sat, 01 Jan 0000 00:00:00 GMT', null],
    ['0000-01-01T00:00:00Z', null],
    ['2026-02-30T10:00:00Z', null],
    ['2026-04-31T10:00:00Z', null],
    ['Mon, 23 Nov 2026 24:00:00 GMT', null],
    ['Mon, 23 Nov 2026 10:60:00 GMT', null],
    ['2026-11-23T10:00:00+25:00', null],
    ['Mon, 23 Nov 2026 10:00:00 +0popular', null],
    ['Mon, 3 Nov 2026 10:00:00 GMT', '2026-11-03T10:00:00Z'],
    ['2026-11-23T10:00:00-05:30', '2026-11-23T15:30:00Z'],
    ['0099-03-01T00:00:00Z', '0099-03-01T00:00:00Z'],
  ])('%j -> %j', (input, expected) => {
    expect(parseNotBefore(input)).toBe(expected);
  });
});

describe('an impossible NotBefore in a document', () => {
  it('gives notBefore null with the original text kept in raw', () => {
    const wire = { EventId: 'E', EventType: 'Reboot', EventStatus: 'Scheduled', NotBefore: 'Mon, 31 Feb 2026 10:00:00 GMT' };
    const [e] = toDomainDocument(WireDocument.parse({ DocumentIncarnation: 1, Events: [wire] })).document.events;
    expect(e!.notBefore).toBeNull();
    expect(e!.raw.NotBefore).toBe('Mon, 31 Feb 2026 10:00:00 GMT');
  });
});

describe('wire document', () => {
  it('reads every captured fixture', () => {
    const docs = [1, 2, 3, 4].map((n) => fixtureDocument(`live-migration-${n}.json`));
    expect(docs.map((d) => d.incarnation)).toEqual([1, 2, 3, 4]);
    expect(docs.map((d) => d.events.length)).toEqual([0, 1, 1, 0]);
    const e = docs[1]!.events[0]!;
    expect(e).toMatchObject({
      eventId: 'C7061BAC-AFDC-4513-B24B-AA5F13A16123',
      eventType: 'Freeze',
      eventStatus: 'Scheduled',
      resources: ['WestNO_0', 'WestNO_1'],
      notBefore: '2022-04-11T22:26:58Z',
      eventSource: 'Platform',
      durationInSeconds: 5,
    });
    expect(docs[2]!.events[0]!.notBefore).toBeNull();
    const user = fixtureDocument('user-reboot-scheduled.json').events[0]!;
    expect(user).toMatchObject({ eventType: 'Reboot', eventSource: 'User', durationInSeconds: -1, description: '' });
  });

  it('keeps the event exactly as received in raw, and freezes it', () => {
    const e = fixtureDocument('live-migration-2.json').events[0]!;
    expect(e.raw).toEqual(JSON.parse(fixtureText('live-migration-2.json')).Events[0]);
    expect(Object.isFrozen(e)).toBe(true);
    expect(Object.isFrozen(e.raw)).toBe(true);
    expect(Object.isFrozen(e.resources)).toBe(true);
  });

  it('gives fields missing in older API versions their documented defaults, and keeps unknown fields', () => {
    const { document } = toDomainDocument(
      WireDocument.parse({
        DocumentIncarnation: 7,
        Events: [{ EventId: 'A', EventType: 'Reboot', EventStatus: 'Scheduled', FutureField: { x: 1 } }],
        SomethingNew: true,
      }),
    );
    const e = document.events[0]!;
    expect(e).toMatchObject({
      resourceType: 'VirtualMachine',
      resources: [],
      notBefore: null,
      description: '',
      eventSource: 'Platform',
      durationInSeconds: -1,
    });
    expect(e.raw.FutureField).toEqual({ x: 1 });
  });

  it.each([
    ['no incarnation', { Events: [] }],
    ['incarnation not an integer', { DocumentIncarnation: 1.5, Events: [] }],
    ['incarnation a string', { DocumentIncarnation: '3', Events: [] }],
    ['no Events', { DocumentIncarnation: 3 }],
    ['Events not an array', { DocumentIncarnation: 3, Events: {} }],
    ['event without EventId', { DocumentIncarnation: 3, Events: [{ EventType: 'Reboot', EventStatus: 'Scheduled' }] }],
    ['event without EventType', { DocumentIncarnation: 3, Events: [{ EventId: 'A', EventStatus: 'Scheduled' }] }],
    ['event without EventStatus', { DocumentIncarnation: 3, Events: [{ EventId: 'A', EventType: 'Reboot' }] }],
    [
      'Resources not strings',
      { DocumentIncarnation: 3, Events: [{ EventId: 'A', EventType: 'Reboot', EventStatus: 'Scheduled', Resources: [1] }] },
    ],
    ['null document', null],
    ['array document', []],
  ])('rejects a schema-invalid document: %s', (_name, doc) => {
    expect(WireDocument.safeParse(doc).success).toBe(false);
  });

  it('keeps one entry per duplicated EventId: Started wins over Scheduled, otherwise the first', () => {
    const base = { EventType: 'Freeze', Resources: ['a'], NotBefore: '' };
    const { document, duplicates } = toDomainDocument(
      WireDocument.parse({
        DocumentIncarnation: 9,
        Events: [
          { ...base, EventId: 'X', EventStatus: 'Scheduled', Description: 'first' },
          { ...base, EventId: 'Y', EventStatus: 'Scheduled', Description: 'y-first' },
          { ...base, EventId: 'X', EventStatus: 'Started', Description: 'second' },
          { ...base, EventId: 'Y', EventStatus: 'Scheduled', Description: 'y-second' },
        ],
      }),
    );
    expect(duplicates).toBe(2);
    expect(document.events.map((e) => [e.eventId, e.eventStatus, e.description])).toEqual([
      ['X', 'Started', 'second'],
      ['Y', 'Scheduled', 'y-first'],
    ]);
  });
});
