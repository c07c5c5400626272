import { describe, expect, it } from 'vitest';
import { diff, type EndContext } from '../../src/pipeline/diff.ts';
import { toDomainDocument, WireDocument, type EventsDocument } from '../../src/imds/wire.ts';
import { fixtureDocument } from '../helpers.ts';

type W = Record<string, unknown>;
const ev = (id: string, over: W = {}): W => ({
  EventId: id,
  EventType: 'Reboot',
  EventStatus: 'Scheduled',
  ResourceType: 'VirtualMachine',
  Resources: ['vm0'],
  NotBefore: 'Mon, 11 Apr 2022 22:26:58 GMT',
  Description: '',
  EventSource: 'Platform',
  DurationInSeconds: -1,
  ...over,
});
const doc = (incarnation: number, ...events: W[]): EventsDocument =>
  toDomainDocument(WireDocument.parse({ DocumentIncarnation: incarnation, Events: events })).document;
const kinds = (prev: EventsDocument | null, next: EventsDocument) => diff(prev, next).map((t) => `${t.kind}:${t.event.eventId}`);

describe('diff: transition rules', () => {
  it.each<[string, EventsDocument | null, EventsDocument, string[]]>([
    ['nothing before, nothing now', null, doc(1), []],
    ['new Scheduled -> scheduled', doc(1), doc(2, ev('A')), ['scheduled:A']],
    ['first seen Started -> started (host failure)', doc(1), doc(2, ev('A', { EventStatus: 'Started', NotBefore: '' })), ['started:A']],
    ['Scheduled -> Started -> started', doc(2, ev('A')), doc(3, ev('A', { EventStatus: 'Started', NotBefore: '' })), ['started:A']],
    ['removed while Started -> completed', doc(3, ev('A', { EventStatus: 'Started', NotBefore: '' })), doc(4), ['completed:A']],
    ['removed while Scheduled -> canceled', doc(2, ev('A')), doc(3), ['canceled:A']],
    ['unchanged -> nothing', doc(2, ev('A')), doc(2, ev('A')), []],
    ['unchanged with a higher incarnation -> nothing', doc(2, ev('A')), doc(5, ev('A')), []],
    ['NotBefore moved -> updated', doc(2, ev('A')), doc(3, ev('A', { NotBefore: 'Tue, 12 Apr 2022 22:26:58 GMT' })), ['updated:A']],
    ['Resources changed -> updated', doc(2, ev('A')), doc(3, ev('A', { Resources: ['vm0', 'vm1'] })), ['updated:A']],
    ['DurationInSeconds changed -> updated', doc(2, ev('A')), doc(3, ev('A', { DurationInSeconds: 9 })), ['updated:A']],
    ['Description changed -> updated', doc(2, ev('A')), doc(3, ev('A', { Description: 'now with words' })), ['updated:A']],
    ['EventType changed -> updated', doc(2, ev('A')), doc(3, ev('A', { EventType: 'Freeze' })), ['updated:A']],
    ['EventSource changed -> updated', doc(2, ev('A')), doc(3, ev('A', { EventSource: 'User' })), ['updated:A']],
    [
      'Started -> Scheduled (backwards) -> updated',
      doc(3, ev('A', { EventStatus: 'Started', NotBefore: '' })),
      doc(4, ev('A')),
      ['updated:A'],
    ],
    ['same NotBefore in another format -> nothing', doc(2, ev('A')), doc(3, ev('A', { NotBefore: '2022-04-11T22:26:58Z' })), []],
    ['unknown fields only -> nothing', doc(2, ev('A')), doc(3, ev('A', { Extra: 1 })), []],
    ['incarnation jumps 2 -> 4', doc(2, ev('A')), doc(4, ev('A', { EventStatus: 'Started', NotBefore: '' })), ['started:A']],
    [
      'incarnation goes backwards: still diffed by EventId',
      doc(9, ev('A'), ev('B')),
      doc(1, ev('B'), ev('C')),
      ['scheduled:C', 'canceled:A'],
    ],
    ['same incarnation, different content -> diffed', doc(5, ev('A')), doc(5, ev('B')), ['scheduled:B', 'canceled:A']],
    [
      'no baseline: events already listed are reported',
      null,
      doc(3, ev('A'), ev('B', { EventStatus: 'Started', NotBefore: '' })),
      ['scheduled:A', 'started:B'],
    ],
    [
      'a whole document processed together',
      doc(2, ev('A'), ev('B'), ev('C', { EventStatus: 'Started', NotBefore: '' })),
      doc(3, ev('B', { EventStatus: 'Started', NotBefore: '' }), ev('D')),
      ['started:B', 'scheduled:D', 'canceled:A', 'completed:C'],
    ],
  ])('%s', (_name, prev, next, expected) => {
    expect(kinds(prev, next)).toEqual(expected);
  });

  it('a status change to Started is one started, not also an updated', () => {
    const t = diff(doc(2, ev('A')), doc(3, ev('A', { EventStatus: 'Started', NotBefore: '', Description: 'x' })));
    expect(t.map((x) => x.kind)).toEqual(['started']);
  });

  it('updated carries the previous event and the changed fields', () => {
    const [t] = diff(doc(2, ev('A')), doc(3, ev('A', { NotBefore: 'Tue, 12 Apr 2022 22:26:58 GMT', DurationInSeconds: 30 })));
    expect(t!.kind).toBe('updated');
    expect(t!.changed).toEqual(['notBefore', 'durationInSeconds']);
    expect(t!.previous!.notBefore).toBe('2022-04-11T22:26:58Z');
    expect(t!.event.notBefore).toBe('2022-04-12T22:26:58Z');
    expect(t!.incarnation).toBe(3);
  });

  it('completed and canceled carry the event as last seen, with the new incarnation', () => {
    const [t] = diff(doc(2, ev('A', { Description: 'last words' })), doc(3));
    expect(t).toMatchObject({ kind: 'canceled', incarnation: 3 });
    expect(t!.event.description).toBe('last words');
  });

  it('the captured live-migration sequence gives scheduled, started, completed', () => {
    const docs = [1, 2, 3, 4].map((n) => fixtureDocument(`live-migration-${n}.json`));
    const seen = docs.slice(1).flatMap((d, i) => diff(docs[i]!, d).map((t) => t.kind));
    expect(seen).toEqual(['scheduled', 'started', 'completed']);
  });

  it('is pure: inputs are not modified', () => {
    const a = doc(2, ev('A'));
    const b = doc(3);
    const before = JSON.stringify([a, b]);
    diff(a, b);
    expect(JSON.stringify([a, b])).toBe(before);
  });
});

describe('diff: a maintenance that happened between two reads is completed, never canceled', () => {
  // NotBefore of ev(): 2022-04-11T22:26:58Z
  const notBefore = Date.parse('2022-04-11T22:26:58Z');
  const end = (over: Partial<EndContext> = {}): EndContext => ({
    now: notBefore - 60_000,
    lastReadAt: notBefore - 61_000,
    bootedAt: notBefore - 86_400_000,
    approved: () => false,
    ...over,
  });
  const ended = (prev: EventsDocument, context: EndContext) =>
    diff(prev, doc(9), context).map((t) => `${t.kind}:${t.event.eventId}:${t.evidence ?? '-'}`);

  it.each<[string, Partial<EndContext>, string]>([
    ['gone before NotBefore, not approved, no boot since the last read: canceled', {}, 'canceled:A:-'],
    ["gone after IMDS accepted this bridge's StartRequests: completed", { approved: (id) => id === 'A' }, 'completed:A:approved'],
    ['gone once NotBefore has passed: completed', { now: notBefore }, 'completed:A:notBefore'],
    [
      'gone after the system booted later than the last read that listed it: completed',
      { bootedAt: notBefore - 30_000 },
      'completed:A:boot',
    ],
    ['a boot before the last read proves nothing: canceled', { bootedAt: notBefore - 62_000 }, 'canceled:A:-'],
    ['no last read known: the boot proves nothing', { lastReadAt: null, bootedAt: notBefore - 1 }, 'canceled:A:-'],
    ['a drill follows its status alone', { now: notBefore, statusOnly: () => true }, 'canceled:A:-'],
  ])('%s', (_name, over, expected) => {
    expect(ended(doc(2, ev('A')), end(over))).toEqual([expected]);
  });

  it('an event gone while Started is completed with no evidence needed', () => {
    expect(ended(doc(3, ev('A', { EventStatus: 'Started', NotBefore: '' })), end())).toEqual(['completed:A:-']);
  });

  it('an event of a status that announces no maintenance (Advisory, unknown) is never taken to have happened', () => {
    const advisory = doc(
      2,
      ev('A', { EventType: 'SpotRebalanceRecommendation', EventStatus: 'Advisory' }),
      ev('B', { EventStatus: 'Odd' }),
    );
    expect(ended(advisory, end({ now: notBefore, approved: () => true }))).toEqual(['canceled:A:-', 'canceled:B:-']);
  });

  it('an event with no NotBefore is completed only by an approval or a boot', () => {
    const none = doc(2, ev('A', { NotBefore: '' }));
    expect(ended(none, end({ now: notBefore + 86_400_000 }))).toEqual(['canceled:A:-']);
    expect(ended(none, end({ bootedAt: notBefore }))).toEqual(['completed:A:boot']);
  });
});
