/**
 * The probe sink over the wire: a real HTTP prober asks the probe every 50 ms while the IMDS
 * simulator schedules, approves and completes events, and the bridge approves with
 * `approveAfterHooks` once the probe has drained.
 */
import { request } from 'node:http';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cli } from '../../test/e2e/process.ts';
import { afterEach, describe, expect, it } from 'vitest';
import { startBridge, stopAll, type Harness } from '../../testkit/harness.ts';
import { HttpPeer } from '../../testkit/http-peer.ts';
import { freePort, laterReads, waitFor } from '../../test/helpers.ts';

afterEach(stopAll);

const POLL_MS = 200;

interface Answer {
  readonly at: number;
  readonly status: number;
  readonly body: Record<string, unknown> | null;
}

/** ask sends one request to the probe. */
function ask(
  url: string,
  method = 'GET',
  path = '/probe',
  body?: string,
): Promise<{ status: number; text: string; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}${path}`, { method, headers: body === undefined ? {} : { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text, headers: res.headers }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Prober asks every 50 ms, as a load balancer would (faster), and keeps every answer. */
class Prober {
  readonly answers: Answer[] = [];
  readonly url: string;
  #timer: NodeJS.Timeout | null = null;
  constructor(url: string) {
    this.url = url;
  }
  start(): this {
    const tick = async () => {
      const at = Date.now();
      try {
        const r = await ask(this.url);
        this.answers.push({ at, status: r.status, body: JSON.parse(r.text) as Record<string, unknown> });
      } catch {
        this.answers.push({ at, status: 0, body: null });
      }
      if (this.#timer !== null) this.#timer = setTimeout(() => void tick(), 50);
    };
    this.#timer = setTimeout(() => void tick(), 0);
    return this;
  }
  stop(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
  }
  /** The first answer with `status` at or after `since`. */
  first(status: number, since: number): Answer | undefined {
    return this.answers.find((a) => a.at >= since && a.status === status);
  }
}

/** holdsOf: the probe sink's own record of the events it holds for. */
function holdsOf(h: Harness): Record<string, { since: number } | undefined> {
  return JSON.parse(h.bridge.store.sinkStates.of('lb').get('holds') ?? '{}') as Record<string, { since: number }>;
}

/** holdSince: when the probe sink began holding for an event (its own record: the drain counts from it). */
function holdSince(h: Harness, eventId: string): number {
  return holdsOf(h)[eventId]!.since;
}

async function bridgeWithProbe(
  port: number,
  drainSeconds: number,
  extra: Partial<Parameters<typeof startBridge>[0]> = {},
): Promise<Harness> {
  return startBridge({
    config: { approval: { rules: [{ match: {}, action: 'approveAfterHooks' }] }, imds: { pollIntervalMs: POLL_MS } },
    sinks: (dir) => [
      { name: 'audit', type: 'file', path: join(dir, 'events.jsonl') },
      { name: 'lb', type: 'probe', listen: `127.0.0.1:${port}`, drainSeconds, prepare: true },
    ],
    ...extra,
  });
}

describe('probe sink', () => {
  // how soon it goes 503 and back to 200 is a figure of `npm run bench` (phase H), not asserted here
  it('goes 503 once the notice is seen, approves no earlier than drainSeconds later, and is 200 again after completion', async () => {
    const port = await freePort();
    const h = await bridgeWithProbe(port, 2);
    const url = `http://127.0.0.1:${port}`;
    const prober = new Prober(url).start();
    await waitFor(() => prober.answers.some((a) => a.status === 200), 'the probe in service');
    expect(prober.answers.find((a) => a.status === 200)!.body).toEqual({ status: 'in-service' });

    const scheduledAt = Date.now();
    const e = h.sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000, startedMs: 1000 });
    const out = await waitFor(() => prober.first(503, scheduledAt), 'the probe out of service');
    expect(out.body).toMatchObject({ status: 'out-of-service', eventId: e.eventId, eventType: 'Reboot' });
    expect(typeof out.body!.notBefore).toBe('string');

    await waitFor(() => h.sim.startRequests.length === 1, 'the approval after the drain', 10_000);
    expect(h.sim.startRequests[0]!.eventIds).toEqual([e.eventId]);
    // the maintenance may start no earlier than drainSeconds after the probe began holding
    expect(h.sim.startRequests[0]!.at).toBeGreaterThanOrEqual(holdSince(h, e.eventId) + 2000);
    expect(prober.answers.filter((a) => a.at > out.at && a.at < h.sim.startRequests[0]!.at).every((a) => a.status === 503)).toBe(true);

    await waitFor(() => h.kinds().includes(`completed:${e.eventId}`), 'the completion', 10_000);
    const completedAt = Date.parse(h.events().find((x) => x.type === 'azure.scheduledevent.completed')!.time);
    const back = await waitFor(() => prober.first(200, out.at), 'the probe back in service');
    // in service only once the completion was seen: every answer between the approval and it was 503
    expect(prober.answers.filter((a) => a.at > out.at && a.at < completedAt - 50).every((a) => a.status === 503)).toBe(true);
    expect(back.at).toBeGreaterThan(h.sim.startRequests[0]!.at);
    prober.stop();
    // recorded once the delivery's outcome is, which may come a moment after the probe answers 200
    await waitFor(() => h.bridge.store.preparations.of(e.eventId)[0]?.state === 'undone', 'the preparation undone');
    expect(h.bridge.store.preparations.of(e.eventId)).toMatchObject([{ sink: 'lb', state: 'undone', detail: 'back in the load balancer' }]);
    const metrics = await h.bridge.metrics.registry.metrics();
    expect(metrics).toMatch(/^sebridge_probe_in_service\{sink="lb"\} 1$/m);
    expect(metrics).toMatch(/^sebridge_probe_requests_total\{sink="lb",status="503"\} [1-9]\d*$/m);
    expect(metrics).toMatch(/^sebridge_prepare_total\{sink="lb",outcome="done"\} 1$/m);
    expect(metrics).toMatch(/^sebridge_prepare_total\{sink="lb",outcome="undone"\} 1$/m);
    expect(metrics).toMatch(/^sebridge_prepare_seconds_count\{sink="lb"\} 1$/m);
  });

  it('answers 503 from start-up until an IMDS read shows nothing pending, and keeps a hold across a restart until the event completes', async () => {
    const port = await freePort();
    const h = await bridgeWithProbe(port, 0, { start: false });
    const url = `http://127.0.0.1:${port}`;
    h.sim.injectFault({ kind: 'status', status: 500, count: 1000 });
    await h.bridge.start();
    const first = await ask(url);
    expect(first.status).toBe(503);
    expect(JSON.parse(first.text)).toMatchObject({ status: 'out-of-service', reason: expect.stringContaining('IMDS') });
    h.sim.clearFaults();
    await waitFor(async () => (await ask(url)).status === 200, 'in service after a good read');

    // a restart while an event holds it: the hold is in the store, so 503 from the first answer
    const e = h.sim.addEvent({ EventType: 'Freeze', noticeMs: 600_000, startedMs: 600_000 });
    await waitFor(async () => (await ask(url)).status === 503, 'out of service');
    await h.bridge.stop();
    const again = await startBridge({
      sim: h.sim,
      dir: h.dir,
      start: false,
      config: { imds: { pollIntervalMs: POLL_MS } },
      sinks: [{ name: 'lb', type: 'probe', listen: `127.0.0.1:${port}`, drainSeconds: 0 }],
    });
    h.sim.injectFault({ kind: 'status', status: 500, count: 1000 });
    await again.bridge.start();
    expect((await ask(url)).status).toBe(503);
    h.sim.clearFaults();
    // good reads since: the hold from the store stays until the event is gone
    await laterReads(h.sim);
    const held = await ask(url);
    expect(held.status).toBe(503);
    expect(JSON.parse(held.text)).toMatchObject({ eventId: e.eventId, eventType: 'Freeze' });
    h.sim.removeEvent(e.eventId);
    await waitFor(async () => (await ask(url)).status === 200, 'in service after the event is gone');
  });

  it('an event that comes while the probe is out of service already counts the drain from then, not again', async () => {
    const port = await freePort();
    const h = await bridgeWithProbe(port, 3);
    const a = h.sim.addEvent({ EventType: 'Freeze', noticeMs: 600_000, startedMs: 600_000 });
    await waitFor(() => h.sim.startRequests.length === 1, 'the first approval after the drain', 10_000);
    const b = h.sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000, startedMs: 600_000 });
    await waitFor(() => h.sim.startRequests.length === 2, 'the second approval', 10_000);
    const holds = JSON.parse(h.bridge.store.sinkStates.of('lb').get('holds')!) as Record<string, { since: number }>;
    expect(holds[b.eventId]!.since).toBe(holds[a.eventId]!.since);
    expect(h.sim.startRequests[1]!.eventIds).toEqual([b.eventId]);
  });

  it('a preparation counts only for the occurrence it prepared, and stops being tried once its occurrence ends', async () => {
    const port = await freePort();
    const flag = join(tmpdir(), `se-bridge-gate-${process.pid}-${port}`);
    const runs = `${flag}.runs`;
    const runsOf = (ceId: string) => {
      try {
        return readFileSync(runs, 'utf8')
          .split('\n')
          .filter((l) => l === ceId).length;
      } catch {
        return 0;
      }
    };
    writeFileSync(flag, '');
    const h = await bridgeWithProbe(port, 2, {
      sinks: (dir) => [
        { name: 'audit', type: 'file', path: join(dir, 'events.jsonl') },
        { name: 'lb', type: 'probe', listen: `127.0.0.1:${port}`, drainSeconds: 2, prepare: true },
        {
          name: 'gate',
          type: 'exec',
          command: ['/bin/sh', '-c', `echo "$SE_CE_ID" >> ${runs}; test -f ${flag}`],
          prepare: true,
          delivery: { initialBackoffMs: 50, maxBackoffMs: 100, maxAttempts: 1000 },
        },
      ],
    });
    const prober = new Prober(`http://127.0.0.1:${port}`).start();
    try {
      await waitFor(() => prober.answers.some((a) => a.status === 200), 'the probe in service');
      // 1. the gate open: the hook succeeds at once; canceled while the probe still drains
      const e = h.sim.addEvent({ EventId: 'A1B2C3D4-0000-4000-8000-000000000031', EventType: 'Reboot', noticeMs: 600_000 });
      const out1 = await waitFor(() => prober.first(503, 0), 'the probe out of service');
      await waitFor(() => h.bridge.store.preparations.counted(e.eventId).has('gate'), 'the gate hook succeeded');
      rmSync(flag);
      h.sim.removeEvent(e.eventId);
      await waitFor(() => h.kinds().includes(`canceled:${e.eventId}`), 'the cancel');
      expect(h.bridge.store.preparations.counted(e.eventId).size).toBe(0);
      const back = await waitFor(() => prober.first(200, out1.at + 1), 'the probe back in service');
      // 2. the same EventId again, the gate closed: neither the first drain nor the first hook success counts
      h.sim.addEvent({ EventId: e.eventId, EventType: 'Reboot', noticeMs: 600_000 });
      await waitFor(() => prober.first(503, back.at + 1), 'the probe out of service again');
      await waitFor(() => runsOf(`${e.eventId}/scheduled/2`) >= 2, 'the gate hook failing for the second occurrence');
      // past the drain of the second occurrence, the hook failed once more and IMDS was read twice: still not approved
      // the probe answers 503 as it begins to hold; its record of the hold is written beside that
      await waitFor(() => holdsOf(h)[e.eventId] !== undefined, 'the probe sink holding for the second occurrence');
      const drained = holdSince(h, e.eventId) + 2000;
      await waitFor(() => Date.now() > drained, 'the end of the drain');
      const failures = runsOf(`${e.eventId}/scheduled/2`);
      await waitFor(() => runsOf(`${e.eventId}/scheduled/2`) > failures, 'the gate hook failing after the drain');
      await laterReads(h.sim);
      expect(h.sim.startRequests).toEqual([]);
      const openedAt = Date.now();
      writeFileSync(flag, '');
      await waitFor(() => h.sim.startRequests.length === 1, 'the approval of the second occurrence', 10_000);
      expect(h.sim.startRequests[0]!.at).toBeGreaterThanOrEqual(openedAt);
      expect(h.sim.startRequests[0]!.at).toBeGreaterThanOrEqual(holdSince(h, e.eventId) + 2000);
      // 3. a hook failing when its event is canceled is not tried again
      rmSync(flag);
      const b = h.sim.addEvent({ EventType: 'Freeze', noticeMs: 600_000 });
      await waitFor(() => runsOf(`${b.eventId}/scheduled`) >= 2, 'the gate hook failing for another event');
      h.sim.removeEvent(b.eventId);
      await waitFor(() => h.kinds().includes(`canceled:${b.eventId}`), 'its cancel');
      const atCancel = runsOf(`${b.eventId}/scheduled`);
      // another event's hook, failing twice through the same sink since: b's retries had their turns
      const c = h.sim.addEvent({ EventType: 'Freeze', noticeMs: 600_000 });
      await waitFor(() => runsOf(`${c.eventId}/scheduled`) >= 2, 'the gate hook failing twice for a later event');
      // the one running when the cancel was committed may finish; none starts after it
      expect(runsOf(`${b.eventId}/scheduled`)).toBeLessThanOrEqual(atCancel + 1);
      h.sim.removeEvent(c.eventId);
      await waitFor(() => h.kinds().includes(`canceled:${c.eventId}`), 'the later one canceled');
      await waitFor(() => (h.bridge.store.outbox.depth().get('gate') ?? 0) === 0, 'nothing left for the gate');
      expect(h.bridge.store.outbox.deadLetters()).toEqual([]);
    } finally {
      prober.stop();
      rmSync(flag, { force: true });
      rmSync(runs, { force: true });
    }
  });

  it('answers only its path, with GET and HEAD, and never reads a body', async () => {
    const port = await freePort();
    await bridgeWithProbe(port, 0);
    const url = `http://127.0.0.1:${port}`;
    await waitFor(async () => (await ask(url)).status === 200, 'in service');
    const head = await ask(url, 'HEAD');
    expect(head.status).toBe(200);
    expect(head.text).toBe('');
    expect((await ask(url, 'GET', '/probe?x=1')).status).toBe(200);
    const other = await ask(url, 'GET', '/metrics');
    expect(other.status).toBe(404);
    expect(JSON.parse(other.text)).toMatchObject({ error: { code: 'NOT_FOUND' } });
    const post = await ask(url, 'POST', '/probe', JSON.stringify({ approve: true }));
    expect(post.status).toBe(405);
    expect(post.headers.allow).toBe('GET, HEAD');
    expect(post.headers.connection).toBe('close');
  });

  it('tells the story: /readyz lists the preparations, and the Slack and Teams messages say what was prepared and when it was approved', async () => {
    const port = await freePort();
    const chat = new HttpPeer();
    await chat.listen();
    try {
      const h = await startBridge({
        config: {
          approval: { rules: [{ match: {}, action: 'approveAfterHooks' }] },
          imds: { pollIntervalMs: POLL_MS },
          observability: { listen: '127.0.0.1:0' },
        },
        sinks: (dir) => [
          { name: 'audit', type: 'file', path: join(dir, 'events.jsonl') },
          { name: 'lb', type: 'probe', listen: `127.0.0.1:${port}`, drainSeconds: 1, prepare: true },
          { name: 'slack', type: 'slack', webhookUrl: `${chat.url}/slack` },
          { name: 'teams', type: 'teams', webhookUrl: `${chat.url}/teams` },
        ],
      });
      const e = h.sim.addEvent({ EventType: 'Reboot', noticeMs: 15 * 60_000, startedMs: 600_000 });
      const readyz = async () =>
        (await (await fetch(`${h.bridge.observabilityUrl}/readyz`)).json()) as {
          preparations?: { eventId: string; preparations: { sink: string; state: string; detail: string | null }[] }[];
        };
      await waitFor(
        async () => (await readyz()).preparations?.[0]?.preparations[0]?.state === 'pending',
        'the preparation pending in /readyz',
      );
      await waitFor(() => h.kinds().includes(`approved:${e.eventId}`), 'the approval after the drain', 10_000);
      const ready = await readyz();
      expect(ready.preparations).toEqual([
        {
          eventId: e.eventId,
          eventType: 'Reboot',
          eventStatus: expect.any(String),
          preparations: [{ sink: 'lb', state: 'done', detail: 'out of the load balancer', at: expect.any(String) }],
        },
      ]);
      const approvedText = (path: string) =>
        chat.requests
          .filter((r) => r.url === path)
          .map((r) => r.body)
          .find((b) => b.includes('approved at'));
      await waitFor(() => approvedText('/slack') && approvedText('/teams'), 'the approved messages');
      // "out of the load balancer · approved at 10:02 UTC, 14m 58s before NotBefore"
      const line = /out of the load balancer · approved at \d\d:\d\d UTC, 1[34]m(?: \d+s)? before NotBefore/;
      expect(approvedText('/slack')).toMatch(line);
      expect(approvedText('/teams')).toMatch(line);
      // the first message, before anything was prepared, says nothing of it
      expect(chat.requests.find((r) => r.url === '/slack')!.body).not.toContain('out of the load balancer');
      // `status` shows the same, read from the daemon's state
      const cfg = join(h.dir, 'status.yaml');
      writeFileSync(
        cfg,
        `imds: { endpoint: ${h.sim.url} }\nstate: { path: ${JSON.stringify(h.config.state.path)} }\nsinks: [{ name: lb, type: probe, listen: "127.0.0.1:${port}", prepare: true }]\n`,
      );
      const json = await cli(['status', '--json', '--config', cfg]);
      expect(json.code).toBe(0);
      expect((JSON.parse(json.stdout) as { events: { preparations: unknown[] }[] }).events[0]!.preparations).toEqual([
        { sink: 'lb', state: 'done', detail: 'out of the load balancer', at: expect.any(String) },
      ]);
      const table = await cli(['status', '--config', cfg]);
      expect(table.stdout).toMatch(
        new RegExp(`Preparations\\n.*SINK\\s+STATE[^\\n]*\\n[- ]+\\n${e.eventId}\\s+lb\\s+done\\s+\\S+\\s+out of the load balancer`),
      );
    } finally {
      await chat.close();
    }
  });
});
