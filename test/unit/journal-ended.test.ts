/**
 * What a member's record says of its events from its journal: the events of its own that ended
 * within the last day (`ended`), however many events of other VMs in the same document ended
 * after them, each once; and when an event was first listed and Started (`seen`), of the
 * occurrence under way when Azure uses an EventId again.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Store } from '../../src/store/store.ts';
import { tempDir } from '../helpers.ts';

const T0 = Date.parse('2026-11-30T10:00:00Z');
let n = 0;
const cleanups: (() => void)[] = [];
afterEach(() => cleanups.splice(0).forEach((c) => c()));

function store(): Store {
  const dir = tempDir();
  const s = Store.open(`${dir.path}/state.db`);
  cleanups.push(() => (s.close(), dir.cleanup()));
  return s;
}

/** journal: one CloudEvent of `eventId` (`mine`: it affects this VM) at `at`. */
function journal(s: Store, eventId: string, transition: string, at: number, mine = true): void {
  const data = { eventId, eventType: 'Reboot', affectsThisVm: mine, notBefore: null, durationInSeconds: -1 };
  const json = JSON.stringify({ id: `ce-${++n}`, data });
  s.journal.appendEvents([{ id: `ce-${n}`, eventId, transition, json, sinks: [] }], undefined, at);
}

describe("a member's ended events and what it saw, from its journal", () => {
  it('lists its own event that ended however many events of other VMs ended after it', () => {
    const s = store();
    journal(s, 'MINE', 'completed', T0);
    for (let i = 0; i < 40; i++) journal(s, `OTHER-${i}`, 'completed', T0 + 1000 + i, false);
    expect(s.journal.endedSince(T0 - 86_400_000, 10).map((e) => e.eventId)).toEqual(['MINE']);
  });

  it('lists an event once, as it ended last, when its EventId ended twice', () => {
    const s = store();
    journal(s, 'AGAIN', 'canceled', T0);
    journal(s, 'AGAIN', 'scheduled', T0 + 60_000);
    journal(s, 'AGAIN', 'completed', T0 + 120_000);
    expect(s.journal.endedSince(T0 - 86_400_000, 10).map((e) => [e.eventId, e.status])).toEqual([['AGAIN', 'Completed']]);
  });

  it('says when the occurrence under way was listed and Started, not an earlier one of the same EventId', () => {
    const s = store();
    journal(s, 'REUSED', 'scheduled', T0);
    journal(s, 'REUSED', 'started', T0 + 60_000);
    journal(s, 'REUSED', 'completed', T0 + 120_000);
    journal(s, 'REUSED', 'scheduled', T0 + 3_600_000);
    expect(s.journal.seenOf('REUSED')).toEqual({ scheduled: new Date(T0 + 3_600_000).toISOString() });
  });
});
