/**
 * What the chat sinks' tests share: Scheduled Events played through the real diff into
 * CloudEvents (`ce`), and an HTTP peer per test on 127.0.0.1 standing in for Slack's and Teams'
 * endpoints, with the sinks made against it closed after each test.
 */
import { pino } from 'pino';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { SinkConfig } from '../src/config/schema.ts';
import { identityFrom } from '../src/imds/identity.ts';
import { toDomainDocument, WireDocument } from '../src/imds/wire.ts';
import { toCloudEvent, type BridgeEvent } from '../src/pipeline/cloudevent.ts';
import { diff } from '../src/pipeline/diff.ts';
import type { Sink, SinkContext } from '../src/sinks/contract.ts';
import { HttpPeer } from './http-peer.ts';

const vm = identityFrom({
  name: 'vm0',
  resourceId: '/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/vm0',
});
const OBSERVED = '2026-11-22T05:00:00.000Z';
function doc(events: Record<string, unknown>[]) {
  return toDomainDocument(WireDocument.parse({ DocumentIncarnation: 2, Events: events })).document;
}
const wire = (over: Record<string, unknown> = {}) => ({
  EventId: 'E-1',
  EventType: 'Freeze',
  EventStatus: 'Scheduled',
  Resources: ['vm0', 'vm1'],
  NotBefore: 'Sun, 22 Nov 2026 05:15:00 GMT',
  Description: 'Live migration.',
  EventSource: 'Platform',
  DurationInSeconds: 5,
  ...over,
});

/** ce: the CloudEvent of a Freeze (or what `over` makes of it) announced, started or completed, for vm0. */
export function ce(kind: 'scheduled' | 'started' | 'completed', over: Record<string, unknown> = {}): BridgeEvent {
  const scheduled = doc([wire(over)]);
  const started = doc([wire({ ...over, EventStatus: 'Started', NotBefore: '' })]);
  const t =
    kind === 'scheduled' ? diff(null, scheduled)[0]! : kind === 'started' ? diff(scheduled, started)[0]! : diff(started, doc([]))[0]!;
  return toCloudEvent(t, { vm, observedAt: OBSERVED });
}

/** httpPeerPerTest: an HTTP peer and a temporary folder per test; `make` builds a sink from raw configuration, closed after the test. */
export function httpPeerPerTest() {
  const state: { peer: HttpPeer | null; dir: string | null; open: Sink[] } = { peer: null, dir: null, open: [] };
  beforeEach(async () => {
    state.peer = new HttpPeer();
    await state.peer.listen();
    state.dir = mkdtempSync(join(tmpdir(), 'se-bridge-test-chat-'));
  });
  afterEach(async () => {
    for (const s of state.open.splice(0)) await s.close();
    await state.peer?.close();
    if (state.dir !== null) rmSync(state.dir, { recursive: true, force: true });
  });
  return {
    peer: (): HttpPeer => {
      if (state.peer === null) throw new Error('no HTTP peer: called outside a test');
      return state.peer;
    },
    dir: (): string => {
      if (state.dir === null) throw new Error('no folder: called outside a test');
      return state.dir;
    },
    async make<C>(
      module: { create(c: C, ctx: SinkContext): Sink | Promise<Sink> },
      raw: Record<string, unknown>,
      extra: Partial<SinkContext> = {},
    ) {
      const sink = await module.create(SinkConfig.parse(raw) as C, { logger: pino({ level: 'silent' }), stdout: process.stdout, ...extra });
      state.open.push(sink);
      return sink;
    },
  };
}

export const send = (s: Sink, e: BridgeEvent) => s.send([e], { signal: new AbortController().signal });
