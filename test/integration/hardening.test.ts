/**
 * Odd but legal input from IMDS, end to end through the bridge with a real store and file
 * sink: Unicode resource ids, transitions that recur, Microsoft's mock server's EventId
 * pattern, a fully configured identity.
 */
import { ImdsConfig } from '../../src/config/schema.ts';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { validateConfig } from '../../src/config/load.ts';
import { Bridge } from '../../src/daemon/bridge.ts';
import { ApprovalService } from '../../src/approval/service.ts';
import { pollOnce } from '../../src/pipeline/poll.ts';
import { ImdsClient } from '../../src/imds/client.ts';
import { identityFrom, type VmIdentity } from '../../src/imds/identity.ts';
import { ImdsSimulator, type SimulatorOptions } from '../../src/simulator/server.ts';
import { Store } from '../../src/store/store.ts';
import { toCloudEvent } from '../../src/pipeline/cloudevent.ts';
import { diff } from '../../src/pipeline/diff.ts';
import { MAX_RAW_DEPTH, toDomainDocument, WireDocument } from '../../src/imds/wire.ts';
import { configSchema as execSchema, MAX_ENV_VALUE_BYTES, runOnce } from '../../src/sinks/exec.ts';
import { startBridge } from '../../testkit/harness.ts';
import { captureLogger, silentLogger, tempDir, waitFor } from '../helpers.ts';

interface Delivered {
  id: string;
  type: string;
  subject: string;
  source: string;
  data: Record<string, unknown> & { notBefore: string | null; documentIncarnation: number };
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** harness: a simulator and one or more bridges (one per VM name) writing to their own files. */
async function simulator(options: SimulatorOptions = {}) {
  const sim = new ImdsSimulator({ vmName: 'vm0', peers: ['vm1'], tickMs: 10, ...options });
  await sim.listen(0);
  cleanups.push(() => sim.close());
  return sim;
}

async function bridgeOn(sim: ImdsSimulator, config: Record<string, unknown> = {}, name = 'a', identityRetryMs?: number) {
  const dir = tempDir();
  cleanups.push(() => dir.cleanup());
  const h = await startBridge({
    sim,
    dir: dir.path,
    config: { ...config, imds: { requestTimeoutMs: 1000, firstRequestTimeoutMs: 2000 }, observability: { listen: '127.0.0.1:0' } },
    sinks: (config.sinks as Record<string, unknown>[] | undefined) ?? [{ name: 'audit', type: 'file', path: join(dir.path, `${name}.jsonl`) }],
    bridge: identityRetryMs === undefined ? {} : { identityRetryMs },
  });
  cleanups.push(() => h.stop());
  return { bridge: h.bridge, lines: h.lines, delivered: () => h.events(`${name}.jsonl`) as unknown as Delivered[] };
}

describe('a resource id that is not plain ASCII', () => {
  it('read from IMDS: events flow, the source is percent-encoded, nothing is logged as an IMDS failure', async () => {
    const sim = await simulator({ resourceGroup: 'rg-café prod' });
    const { lines, delivered } = await bridgeOn(sim);
    const e = sim.addEvent({ noticeMs: 600_000 });
    await waitFor(() => delivered().length === 1, 'the scheduled event');
    const [ce] = delivered();
    expect(ce!.source).toContain('/resourceGroups/rg-caf%C3%A9%20prod/');
    expect(decodeURIComponent(ce!.source)).toBe(sim.compute().resourceId);
    expect((ce!.data.vm as { resourceId: string }).resourceId).toBe(sim.compute().resourceId);
    expect(ce!.subject).toBe(e.eventId);
    expect(lines.filter((l) => Number(l.level) >= 40)).toEqual([]);
  });

  it('configured as identity.resourceId: the same', async () => {
    const sim = await simulator();
    const resourceId = '/subscriptions/s/resourceGroups/grüne Gruppe/providers/Microsoft.Compute/virtualMachines/vm0';
    const { lines, delivered } = await bridgeOn(sim, { identity: { vmName: 'vm0', resourceId } });
    sim.addEvent({ noticeMs: 600_000 });
    await waitFor(() => delivered().length === 1, 'the scheduled event');
    expect(delivered()[0]!.source).toBe('/subscriptions/s/resourceGroups/gr%C3%BCne%20Gruppe/providers/Microsoft.Compute/virtualMachines/vm0');
    expect(lines.some((l) => l.msg === 'IMDS read failed; no transitions from this poll')).toBe(false);
  });
});

describe('a failure of our own mapping', () => {
  it('is a MappingError, never an IMDS error', async () => {
    const sim = await simulator();
    sim.addEvent({ noticeMs: 600_000 });
    const client = new ImdsClient(ImdsConfig.parse({ endpoint: sim.url }));
    cleanups.push(() => client.close());
    // a VM identity without a name cannot be mapped (affectsThisVm needs it)
    const broken = { ...identityFrom(null, { name: 'x' }), name: undefined } as unknown as VmIdentity;
    await expect(pollOnce(client, null, broken)).rejects.toMatchObject({ name: 'MappingError', code: 'MAPPING_FAILED' });
  });

  it('stops an approval before IMDS is told: the record and the approved event are built first', async () => {
    const sim = await simulator();
    const e = sim.addEvent({ noticeMs: 600_000 });
    const client = new ImdsClient(ImdsConfig.parse({ endpoint: sim.url }));
    const store = Store.open(':memory:');
    cleanups.push(() => store.close());
    cleanups.push(() => client.close());
    const read = await client.getScheduledEvents();
    if (read.kind !== 'document') throw new Error('expected a document');
    let emitted = 0;
    const service = new ApprovalService({
      store,
      client,
      logger: silentLogger,
      document: () => read.document,
      vm: () => identityFrom(null, { name: 'vm0' }),
      route: () => {
        throw new TypeError('cannot route');
      },
      emit: () => void emitted++,
    });
    await expect(service.approve(e.eventId, { by: 'test', via: 'api' })).rejects.toThrow('cannot route');
    expect(sim.startRequests).toEqual([]);
    expect(emitted).toBe(0);
    expect(store.approval(e.eventId)).toBeNull();
  });
});

describe('a transition that happens again', () => {
  const doc = (incarnation: number, events: Record<string, unknown>[]) => JSON.stringify({ DocumentIncarnation: incarnation, Events: events });
  const ev = (status: string, notBefore: string) => ({
    EventId: 'E-RECUR',
    EventType: 'Reboot',
    ResourceType: 'VirtualMachine',
    Resources: ['vm0', 'vm1'],
    EventStatus: status,
    NotBefore: notBefore,
    Description: '',
    EventSource: 'Platform',
    DurationInSeconds: -1,
  });

  it('Scheduled, canceled, Scheduled again: a new id with the current data, the same on every VM', async () => {
    const sim = await simulator();
    // two VMs of one availability set, each with its own bridge and state, reading the same IMDS
    const a = await bridgeOn(sim, { identity: { vmName: 'vm0' } }, 'a');
    const b = await bridgeOn(sim, { identity: { vmName: 'vm1' } }, 'b');
    const steps: [number, Record<string, unknown>[], number][] = [
      [2, [ev('Scheduled', 'Mon, 23 Nov 2026 10:00:00 GMT')], 1],
      [3, [], 2],
      [4, [ev('Scheduled', 'Tue, 24 Nov 2026 18:00:00 GMT')], 3],
      [5, [], 4],
      [6, [ev('Scheduled', 'Wed, 25 Nov 2026 09:30:00 GMT')], 5],
    ];
    for (const [incarnation, events, count] of steps) {
      sim.setRawDocument(doc(incarnation, events));
      await waitFor(() => a.delivered().length === count && b.delivered().length === count, `${count} events at both VMs`);
    }
    const got = a.delivered();
    expect(got.map((e) => e.id)).toEqual(['E-RECUR/scheduled', 'E-RECUR/canceled', 'E-RECUR/scheduled/2', 'E-RECUR/canceled/2', 'E-RECUR/scheduled/3']);
    expect(got.map((e) => [e.data.notBefore, e.data.documentIncarnation])).toEqual([
      ['2026-11-23T10:00:00Z', 2],
      ['2026-11-23T10:00:00Z', 3],
      ['2026-11-24T18:00:00Z', 4],
      ['2026-11-24T18:00:00Z', 5],
      ['2026-11-25T09:30:00Z', 6],
    ]);
    expect(b.delivered().map((e) => e.id)).toEqual(got.map((e) => e.id));
    expect(new Set(got.map((e) => e.id)).size).toBe(got.length);
  });

  it('Started, back to Scheduled, Started again: the second started has its own id and body', async () => {
    const sim = await simulator();
    const a = await bridgeOn(sim, { identity: { vmName: 'vm0' } });
    const steps: [number, Record<string, unknown>[], number][] = [
      [2, [ev('Started', '')], 1],
      [3, [ev('Scheduled', 'Mon, 23 Nov 2026 10:00:00 GMT')], 2],
      [4, [ev('Started', '')], 3],
    ];
    for (const [incarnation, events, count] of steps) {
      sim.setRawDocument(doc(incarnation, events));
      await waitFor(() => a.delivered().length === count, `${count} events`);
    }
    const got = a.delivered();
    expect(got.map((e) => e.id)).toEqual(['E-RECUR/started', expect.stringMatching(/^E-RECUR\/updated\/[0-9a-f]{16}$/), 'E-RECUR/started/2']);
    expect(got.map((e) => e.data.documentIncarnation)).toEqual([2, 3, 4]);
  });

  it('keeps counting across a restart', async () => {
    const sim = await simulator();
    const dir = tempDir();
    cleanups.push(() => dir.cleanup());
    const config = validateConfig(
      { imds: { endpoint: sim.url, pollIntervalMs: 200 }, state: { path: join(dir.path, 's.db') }, sinks: [{ name: 'f', type: 'file', path: join(dir.path, 'e.jsonl') }], identity: { vmName: 'vm0' } },
      't',
      {},
    );
    const ids = () => readFileSync(join(dir.path, 'e.jsonl'), 'utf8').trim().split('\n').map((l) => (JSON.parse(l) as { id: string }).id);
    let bridge = await Bridge.create({ config, logger: silentLogger });
    await bridge.start();
    sim.setRawDocument(doc(2, [ev('Scheduled', 'Mon, 23 Nov 2026 10:00:00 GMT')]));
    await waitFor(() => bridge.store.journal().length === 1, 'scheduled');
    sim.setRawDocument(doc(3, []));
    await waitFor(() => bridge.store.journal().length === 2, 'canceled');
    await bridge.stop(1000);
    sim.setRawDocument(doc(4, [ev('Scheduled', 'Tue, 24 Nov 2026 18:00:00 GMT')]));
    bridge = await Bridge.create({ config, logger: silentLogger });
    cleanups.push(() => bridge.stop(1000));
    await bridge.start();
    await waitFor(() => bridge.store.journal().length === 3, 'scheduled again');
    await waitFor(() => ids().length === 3, 'three deliveries');
    expect(ids()).toEqual(['E-RECUR/scheduled', 'E-RECUR/canceled', 'E-RECUR/scheduled/2']);
  });
});

describe('exec hooks', () => {
  const hookEvent = (overrides: Record<string, unknown> = {}) => {
    const wire = { EventId: 'E-HOOK', EventType: 'Reboot', EventStatus: 'Scheduled', Resources: ['vm0'], NotBefore: 'Mon, 23 Nov 2026 10:00:00 GMT', ...overrides };
    const [t] = diff(null, toDomainDocument(WireDocument.parse({ DocumentIncarnation: 1, Events: [wire] })).document);
    return toCloudEvent(t!, { vm: identityFrom(null, { name: 'vm0' }), observedAt: '2026-11-22T10:00:00Z' });
  };
  const execConfig = (command: string[], timeoutMs = 5000) => execSchema.parse({ type: 'exec', name: 'hook', command, timeoutMs });

  it('a hook that exits 0 and leaves a background child is delivered, not killed at its timeout', async () => {
    const dir = tempDir();
    cleanups.push(() => dir.cleanup());
    const pidFile = join(dir.path, 'daemon.pid');
    // the background child keeps the hook's stdout and stderr open, in a session of its own
    const script = `setsid sh -c 'echo $$ > "${pidFile}"; exec sleep 30' & echo "started a service"; exit 0`;
    cleanups.push(() => {
      try {
        process.kill(Number(readFileSync(pidFile, 'utf8')), 'SIGKILL');
      } catch {
        /* gone */
      }
    });
    const outcome = await runOnce(execConfig(['sh', '-c', script], 3000), hookEvent(), new AbortController().signal);
    expect(outcome).toEqual({ status: 'delivered' });
  });

  it('a preparation hook that leaves a background child lets approveAfterHooks approve', async () => {
    const sim = await simulator();
    const dir = tempDir();
    cleanups.push(() => dir.cleanup());
    const pidFile = join(dir.path, 'daemon.pid');
    cleanups.push(() => {
      try {
        process.kill(Number(readFileSync(pidFile, 'utf8')), 'SIGKILL');
      } catch {
        /* gone */
      }
    });
    const script = `setsid sh -c 'echo $$ > "${pidFile}"; exec sleep 30' & exit 0`;
    const { bridge } = await bridgeOn(sim, {
      identity: { vmName: 'vm0' },
      approval: { rules: [{ match: {}, action: 'approveAfterHooks' }] },
      sinks: [{ name: 'drain', type: 'exec', command: ['sh', '-c', script], prepare: true, timeoutMs: 3000, filter: { types: ['scheduled'] }, delivery: { maxAttempts: 1 } }],
    });
    const e = sim.addEvent({ noticeMs: 600_000 });
    await waitFor(() => sim.startRequests.length === 1, 'the approval after the hook', 10_000);
    expect(sim.startRequests[0]!.eventIds).toEqual([e.eventId]);
    expect(bridge.store.deadLetters()).toEqual([]);
  });

  it('a huge event and a NUL in a field: delivered, with the variables cut or left out and the full event on stdin', async () => {
    const dir = tempDir();
    cleanups.push(() => dir.cleanup());
    const resources = Array.from({ length: 100_000 }, (_, i) => `scaleset_${i}`);
    const event = hookEvent({ Resources: resources, Description: 'line\u0000after NUL' });
    const out = join(dir.path, 'env.txt');
    const stdin = join(dir.path, 'stdin.json');
    const script = `cat > "${stdin}"; { echo "T=$SE_ENV_TRUNCATED"; echo "O=$SE_ENV_OMITTED"; echo "D=\${SE_DESCRIPTION-unset}"; echo "R=\${#SE_RESOURCES}"; } > "${out}"`;
    const outcome = await runOnce(execConfig(['sh', '-c', script]), event, new AbortController().signal);
    expect(outcome).toEqual({ status: 'delivered' });
    const env = Object.fromEntries(readFileSync(out, 'utf8').trim().split('\n').map((l) => [l.slice(0, 1), l.slice(2)]));
    expect(env).toEqual({ T: 'SE_RESOURCES', O: 'SE_DESCRIPTION', D: 'unset', R: String(MAX_ENV_VALUE_BYTES) });
    const received = JSON.parse(readFileSync(stdin, 'utf8')) as { data: { resources: string[]; description: string } };
    expect(received.data.resources).toHaveLength(100_000);
    expect(received.data.description).toBe('line\u0000after NUL');
  });
});

describe('unknown fields nested 5,000 levels deep', () => {
  it('are cut in raw; the document and its other events go through', async () => {
    const sim = await simulator();
    const { bridge, delivered, lines } = await bridgeOn(sim, { identity: { vmName: 'vm0' } });
    let nested = '"bottom"';
    for (let i = 0; i < 5000; i++) nested = `{"level":${nested}}`;
    const base = { EventType: 'Reboot', EventStatus: 'Scheduled', Resources: ['vm0'], NotBefore: 'Mon, 23 Nov 2026 10:00:00 GMT' };
    sim.setRawDocument(
      `{"DocumentIncarnation":2,"Events":[${JSON.stringify({ ...base, EventId: 'DEEP' }).slice(0, -1)},"Extra":${nested}},${JSON.stringify({ ...base, EventId: 'PLAIN' })}]}`,
    );
    await waitFor(() => delivered().length === 2, 'both events');
    expect(delivered().map((e) => e.subject).sort()).toEqual(['DEEP', 'PLAIN']);
    const raw = delivered().find((e) => e.subject === 'DEEP')!.data.raw as Record<string, unknown>;
    let node: unknown = raw.Extra;
    let depth = 1;
    while (node !== null && typeof node === 'object') {
      node = (node as { level: unknown }).level;
      depth++;
    }
    expect(depth).toBe(MAX_RAW_DEPTH);
    expect(node).toBe(`[left out: nested deeper than ${MAX_RAW_DEPTH} levels]`);
    expect(bridge.status().consecutiveFailures).toBe(0);
    expect(lines.filter((l) => Number(l.level) >= 40)).toEqual([]);
  });
});

describe("Microsoft's mock server pattern: a new EventId for every state", () => {
  it('is reported by the rules: scheduled, then canceled plus an unannounced started, then completed', async () => {
    const sim = await simulator();
    const { delivered } = await bridgeOn(sim, { identity: { vmName: 'vm0' } });
    const e = sim.addEvent({ newIdPerState: true, noticeMs: 400, startedMs: 600 });
    const first = e.eventId;
    await waitFor(() => delivered().length === 4, 'four transitions', 10_000);
    const second = e.eventId;
    expect(second).not.toBe(first);
    const seen = delivered().map((x) => `${x.type.replace('azure.scheduledevent.', '')}:${x.subject}`);
    expect(seen.slice(0, 1)).toEqual([`scheduled:${first}`]);
    expect(seen.slice(1, 3).sort()).toEqual([`canceled:${first}`, `started:${second}`].sort());
    expect(seen[3]).toBe(`completed:${second}`);
    expect(sim.scenarioOfEvent.size).toBe(0);
    const ids = sim.playScenario('new-id-per-state');
    expect(sim.scenarioOfEvent.get(ids[0]!)).toBe('new-id-per-state');
  });
});

describe('who this VM is', () => {
  const computeReads = (sim: ImdsSimulator) => sim.requests.filter((r) => r.path === '/metadata/instance/compute').length;

  it('fully configured: instance metadata is never asked, and nothing is warned', async () => {
    const sim = await simulator();
    const identity = { vmName: 'vm0', resourceId: '/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/vm0', subscriptionId: 's', resourceGroupName: 'rg', location: 'westeurope' };
    const { bridge, lines, delivered } = await bridgeOn(sim, { identity }, 'a', 50);
    sim.addEvent({ noticeMs: 600_000 });
    await waitFor(() => delivered().length === 1, 'the event');
    await waitFor(() => sim.requests.filter((r) => r.path === '/metadata/scheduledevents').length >= 5, 'five polls');
    expect(computeReads(sim)).toBe(0);
    expect(bridge.identity).toMatchObject({ name: 'vm0', location: 'westeurope', origin: 'config' });
    expect(delivered()[0]!.source).toBe(identity.resourceId);
    expect(lines.filter((l) => Number(l.level) >= 40)).toEqual([]);
  });

  it('partly configured while the compute endpoint fails: warned once, however often it is retried', async () => {
    const sim = await simulator();
    sim.injectFault({ kind: 'status', status: 404, count: 1_000_000, target: 'compute' });
    const { lines } = await bridgeOn(sim, { identity: { vmName: 'vm0' } }, 'a', 50);
    await waitFor(() => computeReads(sim) >= 6, 'six identity reads', 10_000);
    const said = lines.filter((l) => typeof l.msg === 'string' && l.msg.startsWith('cannot read the VM identity'));
    expect(said).toHaveLength(1);
    expect(said[0]!.level).toBe(40);
    expect(lines.filter((l) => l.msg === 'still cannot read the VM identity from IMDS').length).toBeGreaterThanOrEqual(4);
  });
});

describe('approval links', () => {
  it('are offered for scheduled and updated events only, never for one just canceled', () => {
    const config = validateConfig({ approval: { secret: `whsec_${Buffer.alloc(32, 4).toString('base64')}`, publicUrl: 'https://bridge.example' } }, 't', {});
    const vm = identityFrom(null, { name: 'vm0' });
    const links = Bridge.approvalLinks(config, () => vm)!;
    const wire = (NotBefore: string) => ({ EventId: 'E-LINK', EventType: 'Reboot', EventStatus: 'Scheduled', Resources: ['vm0'], NotBefore });
    const doc = (incarnation: number, events: unknown[]) => toDomainDocument(WireDocument.parse({ DocumentIncarnation: incarnation, Events: events })).document;
    const soon = new Date(Date.now() + 3600_000).toUTCString();
    const later = new Date(Date.now() + 7200_000).toUTCString();
    const d1 = doc(1, []);
    const d2 = doc(2, [wire(soon)]);
    const d3 = doc(3, [wire(later)]);
    const d4 = doc(4, []);
    const ce = (a: typeof d1, b: typeof d1) => toCloudEvent(diff(a, b)[0]!, { vm, observedAt: new Date().toISOString() });
    expect(links.link(ce(d1, d2))).toMatch(/^https:\/\/bridge\.example\/v1\/approve\?token=/);
    expect(links.link(ce(d2, d3))).toMatch(/^https:\/\/bridge\.example\/v1\/approve\?token=/);
    const canceled = ce(d3, d4);
    expect(canceled.type).toBe('azure.scheduledevent.canceled');
    expect(canceled.data!.eventStatus).toBe('Scheduled');
    expect(links.link(canceled)).toBeNull();
    expect(links.token(canceled)).toBeNull();
  });
});
