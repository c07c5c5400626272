/**
 * The dispatcher against a real SQLite store, with sinks written for the test that implement
 * the sink contract directly (the protocol sinks have their own tests against real peers).
 */
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Dispatcher, type DispatchTarget, type OutcomeReport } from '../../src/delivery/dispatcher.ts';
import { Store, type PendingEvent } from '../../src/store/store.ts';
import {
  DeliveryConfig,
  FilterConfig,
  delivered,
  reject,
  retry,
  type BridgeEvent,
  type Outcome,
  type Sink,
} from '../../src/sinks/contract.ts';
import { fixtureDocument, silentLogger, tempDir, waitFor } from '../helpers.ts';

let dir: ReturnType<typeof tempDir>;
let store: Store;
let dispatcher: Dispatcher | null = null;
const doc = fixtureDocument('live-migration-1.json');

beforeEach(() => {
  dir = tempDir();
  store = Store.open(join(dir.path, 'state.db'));
});
afterEach(async () => {
  await dispatcher?.stop(1000);
  dispatcher = null;
  store.close();
  dir.cleanup();
});

const pe = (eventId: string, transition: string, sinks: string[]): PendingEvent => ({
  id: `${eventId}/${transition}`,
  eventId,
  transition,
  json: JSON.stringify({
    id: `${eventId}/${transition}`,
    specversion: '1.0',
    type: `azure.scheduledevent.${transition}`,
    source: 'urn:t',
    subject: eventId,
  }),
  sinks,
});
const commit = (...events: PendingEvent[]) => store.journal.commit({ document: doc, etag: null, observedAt: 't', events });

/** A sink whose answers the test scripts; it records what it was sent. */
function scripted(answer: (e: BridgeEvent, call: number) => Outcome | 'hang' | 'throw'): Sink & { sent: string[]; calls: number } {
  const s = {
    sent: [] as string[],
    calls: 0,
    async send(events: readonly BridgeEvent[], { signal }: { signal: AbortSignal }) {
      s.calls++;
      const outcomes: Outcome[] = [];
      for (const e of events) {
        const a = answer(e, s.calls);
        if (a === 'hang') await new Promise((_r, fail) => signal.addEventListener('abort', () => fail(signal.reason)));
        if (a === 'throw') throw new Error('programmer error in sink');
        if (typeof a === 'object') {
          if (a.status === 'delivered') s.sent.push(e.id);
          outcomes.push(a);
        }
      }
      return outcomes;
    },
    async close() {},
  };
  return s;
}

function target(name: string, sink: Sink, delivery: Record<string, number> = {}, maxBatchSize = 10): DispatchTarget {
  return {
    name,
    type: 'test',
    sink,
    maxBatchSize,
    filter: FilterConfig.parse({}),
    prepare: false,
    undoes: false,
    delivery: DeliveryConfig.parse({ initialBackoffMs: 10, maxBackoffMs: 40, timeoutMs: 1000, ...delivery }),
  };
}

function start(targets: DispatchTarget[], reports: OutcomeReport[] = []) {
  dispatcher = new Dispatcher({ outbox: store.outbox, targets, logger: silentLogger, onOutcome: (r) => reports.push(r) });
  dispatcher.start();
  return dispatcher;
}

describe('Dispatcher', () => {
  it('delivers committed events and removes them from the outbox', async () => {
    const sink = scripted(() => delivered);
    commit(pe('A', 'scheduled', ['s']), pe('B', 'scheduled', ['s']));
    start([target('s', sink)]);
    await waitFor(() => sink.sent.length === 2, 'delivery');
    expect(sink.sent).toEqual(['A/scheduled', 'B/scheduled']);
    await waitFor(() => store.outbox.depth().size === 0, 'an empty outbox');
  });

  it('retries with backoff until delivered, keeping the order of one event', async () => {
    const sink = scripted((e, call) => (e.id === 'A/scheduled' && call < 4 ? retry('HTTP 503') : delivered));
    commit(pe('A', 'scheduled', ['s']));
    commit(pe('A', 'started', ['s']));
    const reports: OutcomeReport[] = [];
    start([target('s', sink)], reports);
    await waitFor(() => sink.sent.length === 2, 'delivery after retries');
    expect(sink.sent).toEqual(['A/scheduled', 'A/started']);
    expect(reports.filter((r) => r.outcome === 'retry').map((r) => r.attempts)).toEqual([1, 2, 3]);
    expect(store.outbox.deadLetters()).toEqual([]);
  });

  it('dead-letters a rejected event at once, with the reason', async () => {
    const sink = scripted(() => reject('HTTP 400: bad payload'));
    commit(pe('A', 'scheduled', ['s']));
    start([target('s', sink)]);
    await waitFor(() => store.outbox.deadLetters().length === 1, 'a dead letter');
    expect(sink.calls).toBe(1);
    expect(store.outbox.deadLetters()[0]).toMatchObject({ sink: 's', attempts: 1, lastError: 'rejected: HTTP 400: bad payload' });
    expect(store.outbox.depth().size).toBe(0);
  });

  it('dead-letters after maxAttempts with the last error', async () => {
    const sink = scripted((_e, call) => retry(`HTTP 503 (call ${call})`));
    commit(pe('A', 'scheduled', ['s']));
    start([target('s', sink, { maxAttempts: 3 })]);
    await waitFor(() => store.outbox.deadLetters().length === 1, 'a dead letter');
    expect(sink.calls).toBe(3);
    expect(store.outbox.deadLetters()[0]!.lastError).toBe('gave up after 3 attempts: HTTP 503 (call 3)');
  });

  it('counts a malformed outcome as a retry with its reason, so maxAttempts still ends it', async () => {
    const answers: unknown[][] = [
      [{ status: 'weird' }],
      [null],
      [{ status: 'retry' }],
      [{ status: 'retry', reason: 'x', retryAfterMs: -5 }],
    ];
    for (const [i, answer] of answers.entries()) {
      const sink: Sink = { send: async () => answer as Outcome[], close: async () => {} };
      const name = `s${i}`;
      commit(pe(`E${i}`, 'scheduled', [name]));
      const reports: OutcomeReport[] = [];
      start([target(name, sink, { maxAttempts: 2 })], reports);
      await waitFor(() => store.outbox.deadLetters(name).length === 1, `the dead letter of ${JSON.stringify(answer)}`);
      expect(reports.map((r) => [r.outcome, r.attempts])).toEqual([
        ['retry', 1],
        ['dead-letter', 2],
      ]);
      expect(store.outbox.deadLetters(name)[0]!.lastError).toMatch(/^gave up after 2 attempts: SINK_INVALID_OUTCOME: the sink returned /);
      await dispatcher!.stop(1000);
    }
  });

  it('cuts a reason to 300 characters only after scrubbing it: no prefix of a secret is left at the cut', async () => {
    const secret = 'S3cr3t-Value_0123456789';
    const sink = scripted(() => retry(`${'e'.repeat(290)}${secret} and more`));
    commit(pe('A', 'scheduled', ['s']));
    dispatcher = new Dispatcher({
      outbox: store.outbox,
      targets: [target('s', sink, { maxAttempts: 1 })],
      logger: silentLogger,
      scrub: (t) => t.split(secret).join('[redacted]'),
    });
    dispatcher.start();
    await waitFor(() => store.outbox.deadLetters().length === 1, 'a dead letter');
    const reason = store.outbox.deadLetters()[0]!.lastError;
    expect(reason).toContain(`${'e'.repeat(290)}[redacted]`);
    expect(reason).not.toContain(secret.slice(0, 4));
    expect(reason.length).toBeLessThanOrEqual(300 + 'gave up after 1 attempts: '.length + 1);
  });

  it('dead-letters once an event is older than maxAgeMs', async () => {
    const sink = scripted(() => retry('HTTP 503', 5000));
    store.journal.commit({ document: doc, etag: null, observedAt: 't', events: [pe('A', 'scheduled', ['s'])], now: Date.now() - 1500 });
    start([target('s', sink, { maxAgeMs: 1000, maxAttempts: 100, maxBackoffMs: 10 })]);
    await waitFor(() => store.outbox.deadLetters().length === 1, 'a dead letter');
    expect(sink.calls).toBe(1);
    expect(store.outbox.deadLetters()[0]!.lastError).toMatch(/^gave up after 1000 ms: HTTP 503/);
  });

  it('honours Retry-After, capped by maxBackoffMs', async () => {
    const sink = scripted((_e, call) => (call === 1 ? retry('HTTP 429', 3_600_000) : delivered));
    commit(pe('A', 'scheduled', ['s']));
    const reports: OutcomeReport[] = [];
    start([target('s', sink, { maxBackoffMs: 200 })], reports);
    await waitFor(() => sink.sent.length === 1, 'delivery after a capped Retry-After');
    expect(reports.map((r) => r.outcome)).toEqual(['retry', 'delivered']);
  });

  it('turns a sink that hangs past the timeout into a retry', async () => {
    const sink = scripted((_e, call) => (call === 1 ? 'hang' : delivered));
    commit(pe('A', 'scheduled', ['s']));
    const reports: OutcomeReport[] = [];
    start([target('s', sink, { timeoutMs: 200 })], reports);
    await waitFor(() => sink.sent.length === 1, 'delivery after a timeout');
    expect(reports[0]).toMatchObject({ outcome: 'retry', reason: 'TIMEOUT: no answer within 200 ms' });
  });

  it('keeps the events of a sink that throws, and delivers them once it recovers', async () => {
    let broken = true;
    const sink = scripted(() => (broken ? 'throw' : delivered));
    commit(pe('A', 'scheduled', ['s']));
    const reports: OutcomeReport[] = [];
    start([target('s', sink)], reports);
    await waitFor(() => reports.length >= 2, 'two failed attempts');
    expect(store.outbox.depth().get('s')).toBe(1);
    broken = false;
    await waitFor(() => sink.sent.length === 1, 'delivery after recovery');
  });

  it('isolates sinks: one that never answers does not hold back another', async () => {
    const stuck = scripted(() => 'hang');
    const healthy = scripted(() => delivered);
    commit(pe('A', 'scheduled', ['stuck', 'healthy']));
    start([target('stuck', stuck, { timeoutMs: 600_000 }), target('healthy', healthy)]);
    await waitFor(() => healthy.sent.length === 1, 'the healthy sink');
    commit(pe('B', 'scheduled', ['stuck', 'healthy']));
    dispatcher!.notify();
    await waitFor(() => healthy.sent.length === 2, 'the healthy sink, again');
    expect(stuck.calls).toBe(1);
    expect(store.outbox.depth().get('stuck')).toBe(2);
  });

  it('lets other events of a sink pass one that is waiting to be retried', async () => {
    const sink = scripted((e) => (e.subject === 'A' ? retry('HTTP 503') : delivered));
    commit(pe('A', 'scheduled', ['s']), pe('B', 'scheduled', ['s']));
    start([target('s', sink, { initialBackoffMs: 60_000, maxBackoffMs: 60_000 })]);
    await waitFor(() => sink.sent.includes('B/scheduled'), 'B');
    expect(sink.sent).toEqual(['B/scheduled']);
  });

  it('on stop, leaves what was not delivered in the outbox', async () => {
    const stuck = scripted(() => 'hang');
    commit(pe('A', 'scheduled', ['stuck']));
    const d = start([target('stuck', stuck, { timeoutMs: 600_000 })]);
    await waitFor(() => stuck.calls === 1, 'the send to start');
    await d.stop(100);
    dispatcher = null;
    expect(store.outbox.depth().get('stuck')).toBe(1);
    expect(store.outbox.deadLetters()).toEqual([]);
  });

  it('sends batches up to the sink maximum', async () => {
    const batches: number[] = [];
    const sink: Sink = {
      async send(events) {
        batches.push(events.length);
        return events.map(() => delivered);
      },
      async close() {},
    };
    commit(...Array.from({ length: 7 }, (_, i) => pe(`E${i}`, 'scheduled', ['s'])));
    start([target('s', sink, {}, 3)]);
    await waitFor(() => batches.reduce((a, b) => a + b, 0) === 7, 'all seven');
    expect(batches).toEqual([3, 3, 1]);
  });
});
