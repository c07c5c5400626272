/** Preparations (daemon/preparations.ts) over real SQLite: one owner records, decides readiness and shows states. */
import { afterEach, describe, expect, it } from 'vitest';
import { Preparations, preparersOf, type PreparationOutcome } from '../../src/daemon/preparations.ts';
import { validateConfig } from '../../src/config/load.ts';
import { Store, type PendingEvent } from '../../src/store/store.ts';
import { fixtureDocument } from '../helpers.ts';

const pe = (eventId: string, transition: string): PendingEvent => ({
  id: `${eventId}/${transition}`,
  eventId,
  transition,
  json: JSON.stringify({ id: `${eventId}/${transition}`, specversion: '1.0', type: `azure.scheduledevent.${transition}`, source: 'urn:x' }),
  sinks: [],
});
const outcome = (sink: string, transition: string, o: Partial<PreparationOutcome> = {}): PreparationOutcome => ({
  sink,
  eventId: 'E',
  ceId: `E/${transition}`,
  transition,
  outcome: 'delivered',
  createdAt: Date.now(),
  ...o,
});
const event = { eventId: 'E', eventType: 'Reboot', eventSource: 'Platform', resources: ['vm0'] } as const;

let store: Store | null = null;
afterEach(() => {
  store?.close();
  store = null;
});

describe('Preparations', () => {
  const config = validateConfig(
    {
      sinks: [
        { name: 'hook', type: 'exec', command: ['true'], prepare: true },
        { name: 'lb', type: 'probe', listen: '127.0.0.1:0' },
        { name: 'log', type: 'stdout' },
      ],
    },
    't',
    {},
  );

  it('knows what prepares from one rule: a hook with prepare: true, or a sink that gives the VM back', () => {
    expect(preparersOf(config.sinks).map((p) => [p.name, p.prepare, p.undoes])).toEqual([
      ['hook', true, false],
      ['lb', false, true],
    ]);
  });

  it('records outcomes, says when a hook now counts, and is ready only while the occurrence is current', () => {
    store = Store.open(':memory:');
    const doc = fixtureDocument('live-migration-1.json');
    store.journal.commit({ document: doc, etag: null, observedAt: 't', events: [pe('E', 'scheduled')] });
    const preps = new Preparations(store.preparations, preparersOf(config.sinks));
    expect(preps.any).toBe(true);
    expect(preps.ready(event, 'vm0')).toBe(false);
    expect(preps.states(event, 'vm0').map((s) => [s.sink, s.state])).toEqual([
      ['hook', 'pending'],
      ['lb', 'pending'],
    ]);

    expect(preps.record(outcome('lb', 'scheduled', { outcome: 'retry', reason: 'draining' }))).toBe(false);
    expect(preps.record(outcome('lb', 'scheduled', { detail: 'out of the load balancer' }))).toBe(false);
    expect(preps.record(outcome('log', 'scheduled'))).toBe(false);
    expect(preps.ready(event, 'vm0')).toBe(false);
    expect(preps.record(outcome('hook', 'scheduled', { detail: 'drained' }))).toBe(true);
    expect(preps.ready(event, 'vm0')).toBe(true);
    expect(preps.recorded('E').map((s) => [s.sink, s.state, s.detail])).toEqual([
      ['hook', 'done', 'drained'],
      ['lb', 'done', 'out of the load balancer'],
    ]);

    store.journal.commit({ document: doc, etag: null, observedAt: 't', events: [pe('E', 'canceled')] });
    expect(preps.ready(event, 'vm0')).toBe(false);
    // a success that comes after its occurrence ended changes nothing
    expect(preps.record(outcome('hook', 'scheduled', { detail: 'late' }))).toBe(false);
    expect(preps.record(outcome('lb', 'canceled', { detail: 'back in the load balancer' }))).toBe(false);
    expect(preps.recorded('E').map((s) => [s.sink, s.state, s.detail])).toEqual([
      ['hook', 'done', 'drained'],
      ['lb', 'undone', 'back in the load balancer'],
    ]);
  });

  it('keeps a dead-lettered preparation as failed, with its reason', () => {
    store = Store.open(':memory:');
    store.journal.commit({
      document: fixtureDocument('live-migration-1.json'),
      etag: null,
      observedAt: 't',
      events: [pe('E', 'scheduled')],
    });
    const preps = new Preparations(store.preparations, preparersOf(config.sinks));
    expect(preps.record(outcome('hook', 'scheduled', { outcome: 'dead-letter', reason: 'exit 3' }))).toBe(false);
    expect(preps.ready(event, 'vm0')).toBe(false);
    expect(preps.states(event, 'vm0')).toMatchObject([
      { sink: 'hook', state: 'failed', detail: 'exit 3' },
      { sink: 'lb', state: 'pending' },
    ]);
  });
});
