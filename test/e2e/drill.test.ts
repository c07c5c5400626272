/**
 * `se-bridge drill`: the daemon as a real process polling the project's IMDS simulator, its
 * sinks against real peers on 127.0.0.1 (an HTTP peer for the webhook, a file), and the drill
 * command asking it over the control channel (a Unix socket beside the state database).
 */
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ImdsSimulator } from '../../src/simulator/server.ts';
import { HttpPeer } from '../../testkit/http-peer.ts';
import { CLI, freePort, ROOT, tempDir, waitFor } from '../helpers.ts';
import { awaitWhileRunning, cli, command, start, stopProcesses } from './process.ts';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { AmqpPeer } from '../../src/simulator/servicebus/amqp-peer.ts';
import { KubeStandIn } from '../../testkit/kube-apiserver.ts';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface Report {
  passed: boolean;
  problems: string[];
  drill: { eventId: string; eventType: string; ended: string | null; request: { type: string } };
  sinks: { name: string; delivered: boolean; atMs: number | null; attempts: number; error: string | null }[];
  preparations: { sink: string; mode: string; done: boolean; givenBack: boolean; detail: string | null }[];
  timeline: { atMs: number; step: string; detail: string }[];
  approval: { by: string; via: string; atMs: number } | null;
  events: { transition: string; ceId: string; sinks: { sink: string; outcome: string; attempts: number; detail: string | null }[] }[];
}

interface Setup {
  sim: ImdsSimulator;
  peer: HttpPeer;
  cfg: string;
  dir: string;
  events: () => Record<string, unknown>[];
  child: ReturnType<typeof start>;
}

interface DaemonOptions {
  rules?: unknown[];
  /** More sinks, given the HTTP peer's URL and the folder. */
  sinks?: (peerUrl: string, dir: string) => Record<string, unknown>[];
  /** More top-level configuration. */
  more?: Record<string, unknown>;
}

async function daemon(o: DaemonOptions = {}): Promise<Setup> {
  const rules = o.rules ?? [{ match: {}, action: 'approve' }];
  const sim = new ImdsSimulator({ vmName: 'vm0', tickMs: 10 });
  await sim.listen(0);
  const peer = new HttpPeer();
  await peer.listen();
  const dir = tempDir();
  cleanups.push(
    () => sim.close(),
    () => peer.close(),
    () => dir.cleanup(),
  );
  const file = join(dir.path, 'events.jsonl');
  const cfg = join(dir.path, 'bridge.yaml');
  const config = {
    imds: { endpoint: sim.url, pollIntervalMs: 200 },
    state: { path: join(dir.path, 'state.db') },
    observability: { listen: 'off' },
    log: { level: 'warn' },
    approval: { rules },
    sinks: [
      { name: 'audit', type: 'file', path: file },
      { name: 'hook', type: 'webhook', url: `${peer.url}/events` },
      ...(o.sinks?.(peer.url, dir.path) ?? []),
    ],
    ...o.more,
  };
  writeFileSync(cfg, JSON.stringify(config));
  const child = start(['run', '--config', cfg]);
  cleanups.push(() => stopProcesses([child]));
  await waitFor(
    () => {
      try {
        return statSync(join(dir.path, 'state.db.sock')).isSocket();
      } catch {
        return false;
      }
      // a daemon's start on a machine busy with other suites takes a while: waited for, never timed
    },
    'the control channel',
    60_000,
    50,
  );
  const events = () =>
    (existsSync(file) ? readFileSync(file, 'utf8') : '')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { sim, peer, cfg, dir: dir.path, events, child };
}

// each test starts a daemon and runs the CLI, each waited for on a busy machine: a test's own limit is two minutes
describe('se-bridge drill', { timeout: 120_000 }, () => {
  it('plays a maintenance through every sink (file, webhook, Slack, Teams, Event Hubs), each CloudEvent marked drill: true, approved by the policy, no StartRequests; the report passes', async () => {
    const hub = new AmqpPeer();
    await hub.listen();
    cleanups.push(() => hub.close());
    const s = await daemon({
      sinks: (url) => [
        { name: 'slack', type: 'slack', webhookUrl: `${url}/slack` },
        { name: 'teams', type: 'teams', webhookUrl: `${url}/teams` },
        { name: 'hub', type: 'eventhubs', connectionString: hub.connectionString('maintenance') },
      ],
    });
    const r = await cli(['drill', '--notice', '3s', '--duration', '1s', '--config', s.cfg, '--json'], {}, 60_000);
    // with --json the report alone is on stdout; stderr has only the progress lines
    expect(r.stderr.split('\n').filter((l) => l !== '' && !/^(drill drill-| {2}\+\d+\.\d s {2})/.test(l))).toEqual([]);
    expect(r.code, r.stdout).toBe(0);
    const report = JSON.parse(r.stdout) as Report;
    expect(report.passed).toBe(true);
    expect(report.drill.ended).toBe('completed');
    expect(report.drill.eventId).toMatch(/^drill-[0-9a-f-]{36}$/);
    expect(report.approval).toMatchObject({ via: 'policy' });
    expect(report.events.map((e) => e.transition)).toEqual(['scheduled', 'approved', 'started', 'completed']);
    // the contract's shape (drill --json): per sink, per preparation, the approval, the timeline
    expect(report.drill.eventType).toBe('Reboot');
    expect(report.sinks.map((x) => x.name).sort()).toEqual(['audit', 'hook', 'hub', 'slack', 'teams']);
    for (const x of report.sinks) expect(x).toMatchObject({ delivered: true, attempts: 1, error: null, atMs: expect.any(Number) });
    expect(report.preparations).toEqual([]);
    const steps = report.timeline.map((t) => t.step);
    expect(steps[0]).toBe('drill');
    expect(steps.at(-1) === 'ended' || steps.at(-1) === 'delivered').toBe(true);
    expect(steps.filter((x) => x === 'delivered')).toHaveLength(20);
    expect(steps).toContain('approved');
    expect(report.timeline.map((t) => t.atMs)).toEqual([...report.timeline.map((t) => t.atMs)].sort((a, b) => a - b));
    const sinks = ['audit', 'hook', 'hub', 'slack', 'teams'];
    for (const e of report.events) {
      expect(e.sinks.map((x) => x.sink).sort()).toEqual(sinks);
      for (const x of e.sinks) expect(x).toMatchObject({ outcome: 'delivered', attempts: 1 });
    }
    // nothing reached IMDS
    expect(s.sim.startRequests).toEqual([]);
    // every CloudEvent is marked: in the file (structured), the webhook's headers (binary), the
    // Event Hubs message's application properties; the chat messages lead with DRILL
    const inFile = s.events();
    expect(inFile.map((e) => e.type)).toEqual([
      'azure.scheduledevent.scheduled',
      'azure.scheduledevent.approved',
      'azure.scheduledevent.started',
      'azure.scheduledevent.completed',
    ]);
    for (const e of inFile) expect(e).toMatchObject({ drill: true, subject: report.drill.eventId });
    const hooks = s.peer.requests.filter((q) => q.url === '/events');
    expect(hooks).toHaveLength(4);
    for (const q of hooks) expect(q.headers['ce-drill']).toBe('true');
    expect(hub.messages).toHaveLength(4);
    for (const m of hub.messages)
      expect(m.message.application_properties).toMatchObject({ cloudEvents_drill: true, cloudEvents_subject: report.drill.eventId });
    const slack = s.peer.requests.filter((q) => q.url === '/slack').map((q) => JSON.parse(q.body) as { text: string });
    expect(slack.length).toBeGreaterThanOrEqual(1);
    for (const m of slack) expect(m.text).toMatch(/^DRILL: vm0[ :]/);
    const teams = s.peer.requests.filter((q) => q.url === '/teams');
    expect(teams.length).toBeGreaterThanOrEqual(1);
    for (const q of teams) expect(q.body).toMatch(/"DRILL: vm0[ :]/);
  });

  it('waits for a person: the approval through the signed link is recorded with who and how, and nothing is posted to IMDS', async () => {
    const port = await freePort();
    const s = await daemon({
      rules: [{ match: {}, action: 'await' }],
      more: { server: { listen: `127.0.0.1:${port}` } },
      sinks: (url) => [{ name: 'slack', type: 'slack', webhookUrl: `${url}/slack` }],
    });
    const cfg = JSON.parse(readFileSync(s.cfg, 'utf8')) as Record<string, Record<string, unknown>>;
    cfg.approval!.secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    writeFileSync(s.cfg, JSON.stringify(cfg));
    await stopProcesses([s.child]);
    const child = start(['run', '--config', s.cfg]);
    cleanups.push(() => stopProcesses([child]));
    await waitFor(() => existsSync(join(s.dir, 'state.db.sock')), 'the control channel again');

    const run = command(
      process.execPath,
      [CLI, 'drill', '--notice', '30s', '--duration', '1s', '--config', s.cfg, '--json'],
      { cwd: ROOT, env: process.env },
      60_000,
    );
    const token = await waitFor(() => {
      const m = s.peer.requests
        .filter((q) => q.url === '/slack')
        .map((q) => /v1\/approve\?token=([A-Za-z0-9._~%-]+)/.exec(q.body)?.[1])
        .find(Boolean);
      return m ?? null;
    }, 'the approval link in the Slack message');
    const post = await fetch(`http://127.0.0.1:${port}/v1/approve`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `token=${token}`,
    });
    expect(post.status).toBe(200);
    const r = await run;
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const report = JSON.parse(r.stdout) as Report;
    expect(report.approval).toMatchObject({ by: 'approval link', via: 'link' });
    // approved after the drill's event was scheduled and before it started (the notice was 30 s)
    const at = (step: string) => report.timeline.find((t) => t.step === step)!.atMs;
    expect(report.approval!.atMs).toBeGreaterThanOrEqual(at('scheduled'));
    expect(report.approval!.atMs).toBeLessThanOrEqual(at('started'));
    expect(report.events.map((e) => e.transition)).toEqual(['scheduled', 'approved', 'started', 'completed']);
    expect(s.sim.startRequests).toEqual([]);
  });

  it('rehearses preparations by default (the probe keeps answering 200, the drain is asked as dry runs), and prepares for real with --prepare real, given back at the end', async () => {
    const api = await new KubeStandIn().start();
    cleanups.push(() => api.close());
    api.addNode('aks-node-0', {});
    api.addPod('web', 'web-0', 'aks-node-0', { owner: 'ReplicaSet', grace: 1 });
    api.addPod('web', 'web-1', 'aks-node-0', { owner: 'ReplicaSet', grace: 1 });
    const probePort = await freePort();
    const s = await daemon({
      rules: [{ match: {}, action: 'approveAfterHooks' }],
      sinks: (_url, dir) => {
        const kubeconfig = join(dir, 'kubeconfig');
        writeFileSync(kubeconfig, api.kubeconfig());
        return [
          { name: 'lb', type: 'probe', listen: `127.0.0.1:${probePort}`, drainSeconds: 1, prepare: true },
          // a real drill's drain needs gracePeriodSeconds + deadlineMarginSeconds of notice (10 s here)
          {
            name: 'node',
            type: 'kubernetes',
            kubeconfig,
            nodeName: 'aks-node-0',
            prepare: true,
            drain: { pollMs: 50, gracePeriodSeconds: 5 },
          },
        ];
      },
    });
    const node = structuredClone(api.nodes.get('aks-node-0')!);
    // the probe's answers, watched every 50 ms while a drill plays (bounded: 2 minutes)
    const watch = (): { answers: number[]; stop: () => Promise<void> } => {
      const answers: number[] = [];
      let on = true;
      const done = (async () => {
        for (let i = 0; on && i < 2400; i += 1) {
          answers.push((await fetch(`http://127.0.0.1:${probePort}/probe`)).status);
          await new Promise((ok) => setTimeout(ok, 50));
        }
      })();
      return { answers, stop: async () => ((on = false), await done) };
    };
    await waitFor(async () => (await fetch(`http://127.0.0.1:${probePort}/probe`)).status === 200, 'the probe in service');

    const rehearsed = watch();
    const r = await cli(['drill', '--notice', '20s', '--duration', '1s', '--config', s.cfg, '--json'], {}, 60_000);
    await rehearsed.stop();
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const report = JSON.parse(r.stdout) as Report;
    expect(report.approval).toMatchObject({ via: 'hooks' });
    const scheduled = new Map(report.events[0]!.sinks.map((x) => [x.sink, x.detail]));
    expect(scheduled.get('lb')).toMatch(/^rehearsed: would answer 503 on \/probe for 1 s/);
    expect(scheduled.get('node')).toMatch(
      /^rehearsed: node aks-node-0: the drain would empty the node: 2 pods would be evicted, 0 skipped/,
    );
    expect(report.preparations.map((p) => [p.sink, p.mode, p.done, p.givenBack]).sort()).toEqual([
      ['lb', 'rehearse', true, true],
      ['node', 'rehearse', true, true],
    ]);
    expect(rehearsed.answers.length).toBeGreaterThan(5);
    expect(new Set(rehearsed.answers)).toEqual(new Set([200]));
    expect(Object.fromEntries(api.dryRuns)).toEqual({ 'web/web-0': [201], 'web/web-1': [201] });
    expect(api.evictions.size).toBe(0);
    expect(api.requests.filter((q) => q.method === 'PATCH')).toEqual([]);
    expect(api.nodes.get('aks-node-0')).toEqual(node);
    expect(s.sim.startRequests).toEqual([]);

    const real = watch();
    const r2 = await cli(['drill', '--prepare', 'real', '--notice', '20s', '--duration', '1s', '--config', s.cfg, '--json'], {}, 60_000);
    await real.stop();
    expect(r2.code, r2.stdout + r2.stderr).toBe(0);
    const report2 = JSON.parse(r2.stdout) as typeof report;
    const prepared = new Map(report2.events[0]!.sinks.map((x) => [x.sink, x.detail]));
    expect(prepared.get('lb')).toBe('out of the load balancer');
    expect(prepared.get('node')).toBe('node aks-node-0 cordoned and drained: 2 pods evicted');
    expect(report2.preparations.map((p) => [p.sink, p.mode, p.done]).sort()).toEqual([
      ['lb', 'real', true],
      ['node', 'real', true],
    ]);
    // out of service during the drill, back in service at its end
    expect(real.answers).toContain(503);
    await waitFor(async () => (await fetch(`http://127.0.0.1:${probePort}/probe`)).status === 200, 'the probe back in service');
    expect(Object.fromEntries(api.evictions)).toEqual({ 'web/web-0': [201], 'web/web-1': [201] });
    await waitFor(() => api.nodes.get('aks-node-0')!.spec.unschedulable !== true, 'the node given back');
    expect(api.nodes.get('aks-node-0')!.metadata.annotations?.['scheduledevents.azure.com/prepared']).toBeUndefined();
    expect(s.sim.startRequests).toEqual([]);

    // a drain a budget would block: the rehearsal says so, by pod and budget, and the drill fails
    api.addPod('web', 'db-0', 'aks-node-0', { owner: 'StatefulSet' });
    api.budgets.set('web/db-0', 1_000_000);
    api.budgetNames.set('web/db-0', 'db-pdb');
    const evictions = api.evictions.size;
    const r3 = await cli(['drill', '--notice', '2s', '--duration', '1s', '--config', s.cfg, '--json'], {}, 60_000);
    expect(r3.code, r3.stderr).toBe(1);
    const report3 = JSON.parse(r3.stdout) as Report;
    expect(report3.passed).toBe(false);
    const node3 = report3.events[0]!.sinks.find((x) => x.sink === 'node')!;
    expect(node3.outcome).toBe('dead-letter');
    expect(report3.problems.join('\n')).toMatch(
      /node: scheduled dead-letter \((?:rejected: )?KUBE_DRILL_BLOCKED: rehearsed: node aks-node-0: the drain would be blocked by 1 pod: web\/db-0/,
    );
    expect(report3.approval, 'no approval after hooks when one failed').toBeNull();
    expect(api.evictions.size, 'still only dry runs').toBe(evictions);
  });

  it('one drill at a time; a real event ends a drill at once and takes over; none while a real event is pending; the channel is the daemon user’s alone', async () => {
    const s = await daemon({ rules: [{ match: {}, action: 'await' }] });
    const first = command(
      process.execPath,
      [CLI, 'drill', '--notice', '60s', '--config', s.cfg, '--json'],
      { cwd: ROOT, env: process.env },
      60_000,
    );
    await awaitWhileRunning(first, () => s.events().length === 1, 'the drill scheduled');
    // status shows the drill the daemon plays (IMDS does not list it)
    const status = await cli(['status', '--config', s.cfg, '--json']);
    expect(status.code, status.stderr).toBe(0);
    const shown = JSON.parse(status.stdout) as { events: unknown[]; drill: { eventId: string; ended: null } };
    expect(shown.events).toEqual([]);
    expect(shown.drill).toMatchObject({ eventId: expect.stringMatching(/^drill-/), ended: null });
    const second = await cli(['drill', '--config', s.cfg]);
    expect(second.code).toBe(1);
    expect(second.stderr).toMatch(/refused: drill drill-[0-9a-f-]+ is being played; one drill at a time/);

    // a real event for this VM ends the drill in the read that brings it
    const real = s.sim.addEvent({ EventType: 'Freeze', noticeMs: 600_000 });
    const r = await first;
    expect(r.code, r.stderr).toBe(1);
    const report = JSON.parse(r.stdout) as Report;
    expect(report.drill.ended).toBe('ended by a real event');
    expect(report.passed).toBe(false);
    expect(report.problems).toContain('a real event ended the drill');
    expect(report.events.map((e) => e.transition)).toEqual(['scheduled', 'canceled']);
    for (const e of report.events) for (const x of e.sinks) expect(x.outcome).toBe('delivered');
    await waitFor(() => s.events().some((e) => e.subject === real.eventId), 'the real event delivered');
    const theReal = s.events().find((e) => e.subject === real.eventId)!;
    expect(theReal.type).toBe('azure.scheduledevent.scheduled');
    expect(theReal.drill).toBeUndefined();

    // no drill while the real event is pending
    const refused = await cli(['drill', '--config', s.cfg]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(new RegExp(`refused: a real event is pending for this VM \\(Freeze ${real.eventId}\\); no drill now`));

    // the control channel: a socket only the daemon's user can use
    const socket = join(s.dir, 'state.db.sock');
    expect(statSync(socket).mode & 0o777).toBe(0o600);
    if (process.getuid?.() === 0) {
      // another user, even one given a configuration to read, cannot reach it
      const open = join(tmpdir(), `se-bridge-drill-${process.pid}.yaml`);
      writeFileSync(open, readFileSync(s.cfg), { mode: 0o644 });
      cleanups.push(() => rmSync(open, { force: true }));
      const other = spawnSync(process.execPath, [CLI, 'drill', '--config', open], {
        cwd: ROOT,
        uid: 65534,
        gid: 65534,
        encoding: 'utf8',
        timeout: 30_000,
        env: { PATH: process.env.PATH ?? '', HOME: '/' },
      });
      expect(other.status, other.stderr).toBe(1);
      expect(other.stderr).toMatch(/cannot connect to .*state\.db\.sock: permission denied/);
    }
    const events = s.events().filter((e) => e.drill === true).length;
    expect(events, 'refused drills played nothing').toBe(2);
  });

  it('--end ends the drill being played; the report is a timeline for people; /readyz and the metrics show the drill', async () => {
    const metricsPort = await freePort();
    const s = await daemon({
      rules: [{ match: {}, action: 'await' }],
      more: { observability: { listen: `127.0.0.1:${metricsPort}` } },
      // a sink that never takes drills
      sinks: (_url, dir) => [{ name: 'central', type: 'file', path: join(dir, 'central.jsonl'), filter: { drills: false } }],
    });
    const run = command(
      process.execPath,
      [CLI, 'drill', '--type', 'Freeze', '--notice', '60s', '--config', s.cfg],
      { cwd: ROOT, env: process.env },
      60_000,
    );
    await awaitWhileRunning(run, () => s.events().length === 1, 'the drill scheduled');
    // /readyz says the drill once the daemon has read it (its first delivery may come a moment before)
    const readyz = await waitFor(async () => {
      const r = (await (await fetch(`http://127.0.0.1:${metricsPort}/readyz`)).json()) as { drill?: Record<string, unknown> };
      return r.drill === undefined ? null : r;
    }, '/readyz to say the drill');
    expect(readyz.drill).toMatchObject({ eventId: expect.stringMatching(/^drill-/), ended: null, request: { type: 'Freeze' } });
    const end = await cli(['drill', '--end', '--config', s.cfg]);
    expect(end.code, end.stderr).toBe(0);
    expect(end.stdout).toBe('drill ended\n');
    const r = await run;
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(
      /^drill drill-[0-9a-f-]+: Freeze for vm0, NotBefore in 60 s, Started for 30 s; preparations rehearsed; nothing is asked of Azure\n/,
    );
    expect(r.stdout).toMatch(/^ended: ended by hand at \+\d+\.\d s$/m);
    expect(r.stdout).toMatch(/^approval: none/m);
    expect(r.stdout).toMatch(/^TIME\s+TRANSITION\s+SINK\s+RESULT\s+ATTEMPTS\s+DETAIL$/m);
    expect(r.stdout).toMatch(/^\+\d+\.\d s\s+scheduled\s+audit\s+delivered\s+1$/m);
    expect(r.stdout).toMatch(/^\+\d+\.\d s\s+canceled\s+hook\s+delivered\s+1$/m);
    expect(r.stdout).toMatch(/\nPASSED: every step of the drill passed\n$/);
    expect(s.events().map((e) => e.type)).toEqual(['azure.scheduledevent.scheduled', 'azure.scheduledevent.canceled']);
    expect(r.stdout).not.toContain('central');
    expect(existsSync(join(s.dir, 'central.jsonl')), 'filter.drills: false').toBe(false);
    // counted as a drill's, and not among the events IMDS lists
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    expect(metrics).toMatch(/^sebridge_transitions_total\{transition="scheduled",drill="true"\} 1$/m);
    expect(metrics).toMatch(/^sebridge_transitions_total\{transition="canceled",drill="true"\} 1$/m);
    expect(metrics).not.toMatch(/^sebridge_transitions_total\{[^}]*drill="false"\}/m);
    expect(metrics).not.toMatch(/^sebridge_events\{/m);
    // nothing left to end
    const again = await cli(['drill', '--end', '--config', s.cfg]);
    expect(again.code).toBe(1);
    expect(again.stdout).toBe('no drill is being played\n');
  });

  it("says per sink the attempts of the delivery that took the most, not the sum of its deliveries' attempts", async () => {
    const s = await daemon({
      sinks: (url) => [{ name: 'flaky', type: 'webhook', url: `${url}/flaky`, delivery: { initialBackoffMs: 50, maxBackoffMs: 100 } }],
    });
    // the first request to /flaky is answered 503: its first delivery (the scheduled CloudEvent) takes two attempts
    let refused = 0;
    s.peer.answer = (r) => (r.url === '/flaky' && refused++ === 0 ? { status: 503 } : { status: 200 });
    const r = await cli(['drill', '--notice', '0s', '--duration', '1s', '--config', s.cfg, '--json'], {}, 60_000);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const report = JSON.parse(r.stdout) as Report;
    expect(report.events.map((e) => e.transition)).toEqual(['scheduled', 'approved', 'started', 'completed']);
    const flaky = report.events.map((e) => e.sinks.find((x) => x.sink === 'flaky')!.attempts);
    expect(flaky).toEqual([2, 1, 1, 1]);
    expect(Object.fromEntries(report.sinks.map((x) => [x.name, [x.delivered, x.attempts]]))).toEqual({
      audit: [true, 1],
      hook: [true, 1],
      flaky: [true, 2],
    });
    expect(s.peer.requests.filter((q) => q.url === '/flaky')).toHaveLength(5);
  });

  it('--sink plays only to the sinks named; an exec hook runs for a drill only with drill: true, with SE_DRILL=1', async () => {
    const s = await daemon({
      sinks: (_url, dir) => {
        const write = (name: string) => [
          process.execPath,
          '-e',
          "require('fs').appendFileSync(process.argv[1], `${process.env.SE_TRANSITION} ${process.env.SE_DRILL}\\n`)",
          join(dir, `${name}.txt`),
        ];
        return [
          { name: 'ready-hook', type: 'exec', command: write('ready-hook'), drill: true },
          { name: 'plain-hook', type: 'exec', command: write('plain-hook') },
        ];
      },
    });
    const only = await cli(['drill', '--sink', 'audit', '--notice', '0s', '--duration', '1s', '--config', s.cfg, '--json'], {}, 60_000);
    expect(only.code, only.stdout + only.stderr).toBe(0);
    const report = JSON.parse(only.stdout) as Report;
    for (const e of report.events) expect(e.sinks.map((x) => x.sink)).toEqual(['audit']);
    expect(s.peer.requests).toEqual([]);
    expect(existsSync(join(s.dir, 'ready-hook.txt'))).toBe(false);

    const all = await cli(['drill', '--notice', '0s', '--duration', '1s', '--config', s.cfg, '--json'], {}, 60_000);
    expect(all.code, all.stdout + all.stderr).toBe(0);
    const report2 = JSON.parse(all.stdout) as Report;
    const plain = report2.events.flatMap((e) => e.sinks.filter((x) => x.sink === 'plain-hook'));
    expect(plain.length).toBe(4);
    for (const x of plain)
      expect(x).toMatchObject({ outcome: 'delivered', detail: 'skipped: a drill (drill: true runs this hook for drills)' });
    expect(existsSync(join(s.dir, 'plain-hook.txt'))).toBe(false);
    expect(readFileSync(join(s.dir, 'ready-hook.txt'), 'utf8')).toBe('scheduled 1\napproved 1\nstarted 1\ncompleted 1\n');
    // a drill with an unknown sink is a usage error
    const unknown = await cli(['drill', '--sink', 'nope', '--config', s.cfg]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/no sink is named nope; the sinks are audit, hook, ready-hook, plain-hook/);
  });

  it('a real drain never hurts: a notice shorter than the drain needs is refused up front (JSON with --json); each pod gets its own grace; a budget is never broken, whatever onDeadline says', async () => {
    const api = await new KubeStandIn().start();
    cleanups.push(() => api.close());
    api.addNode('aks-node-0', {});
    api.addPod('web', 'web-0', 'aks-node-0', { owner: 'ReplicaSet', grace: 2 });
    api.addPod('web', 'db-0', 'aks-node-0', { owner: 'StatefulSet', grace: 2 });
    api.budgets.set('web/db-0', 1_000_000);
    api.budgetNames.set('web/db-0', 'db-pdb');
    const s = await daemon({
      rules: [{ match: {}, action: 'approveAfterHooks' }],
      sinks: (_url, dir) => {
        const kubeconfig = join(dir, 'kubeconfig');
        writeFileSync(kubeconfig, api.kubeconfig());
        const drain = { gracePeriodSeconds: 2, deadlineMarginSeconds: 1, onDeadline: 'delete', timeoutSeconds: 2, pollMs: 50 };
        return [{ name: 'node', type: 'kubernetes', kubeconfig, nodeName: 'aks-node-0', prepare: true, drain }];
      },
    });
    const before = structuredClone(api.nodes.get('aks-node-0')!);

    // with no notice a real drain would evict with grace 0: refused before anything is touched
    const short = await cli(['drill', '--prepare', 'real', '--notice', '0s', '--config', s.cfg, '--json']);
    expect(short.code).toBe(1);
    expect(JSON.parse(short.stdout)).toEqual({
      passed: false,
      error: {
        code: 'DRILL_REFUSED',
        message: expect.stringMatching(/^refused: --prepare real needs --notice 3s at least for sink node: /),
      },
    });
    expect(short.stderr).toMatch(/drain\.gracePeriodSeconds \(2 s\)/);
    expect(api.requests.filter((q) => q.method !== 'GET')).toEqual([]);
    expect(api.nodes.get('aks-node-0')).toEqual(before);

    // with enough notice: web-0 is evicted with its own grace; db-0, which its budget holds, is
    // never deleted past it (a real event with onDeadline: delete would be), so the drill fails
    const r = await cli(['drill', '--prepare', 'real', '--notice', '4s', '--duration', '1s', '--config', s.cfg, '--json'], {}, 90_000);
    expect(r.code, r.stdout + r.stderr).toBe(1);
    const report = JSON.parse(r.stdout) as Report;
    expect(report.passed).toBe(false);
    const evictions = api.requests.filter((q) => q.method === 'POST' && q.path.includes('/eviction') && !q.path.includes('dryRun'));
    const graceOf = (pod: string) =>
      evictions
        .filter((q) => q.path.includes(`/pods/${pod}/`))
        .map((q) => (q.body as { deleteOptions?: { gracePeriodSeconds?: number } }).deleteOptions?.gracePeriodSeconds);
    expect(graceOf('web-0')).toEqual([2]);
    expect(graceOf('db-0').length).toBeGreaterThan(0);
    expect(api.deletions.size).toBe(0);
    expect(api.pods.has('web/db-0')).toBe(true);
    await waitFor(() => api.nodes.get('aks-node-0')!.spec.unschedulable !== true, 'the node given back');
    expect(s.sim.startRequests).toEqual([]);
  }, 120_000);

  it('says what happens while it plays, in one time format and in time order; --sink alone plays 5 s Started', async () => {
    const s = await daemon();
    const r = await cli(['drill', '--sink', 'audit', '--notice', '0s', '--config', s.cfg], {}, 60_000);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/Started for 5 s/);
    // progress lines, each step once, as it happens
    const progress = r.stdout.split('\n').filter((l) => /^ {2}\+\d+\.\d s {2}/.test(l));
    expect(progress.map((l) => /^ {2}\+\d+\.\d s {2}(\w+)/.exec(l)![1])).toEqual(
      expect.arrayContaining(['drill', 'scheduled', 'approved', 'started', 'completed', 'delivered', 'ended']),
    );
    const times = (lines: string[]) => lines.map((l) => Number(/\+(\d+\.\d) s/.exec(l)![1]));
    const sorted = (xs: number[]) => xs.every((x, i) => i === 0 || xs[i - 1]! <= x);
    expect(sorted(times(progress))).toBe(true);
    // the report's rows: the same format, in time order
    const rows = r.stdout.split('\n').filter((l) => /^\+\d+\.\d s\s+(scheduled|approved|started|completed)\s/.test(l));
    expect(rows.length).toBe(4);
    expect(sorted(times(rows))).toBe(true);
    expect(r.stdout).not.toMatch(/\d{2}:\d{2}:\d{2}/);
  });

  it('talks only to the daemon: a socket another user put where the channel would be is refused, and an answer of another shape is not believed', async () => {
    const s = await daemon();
    // an impostor answering on the path, as another user (root can give it away)
    const socket = join(s.dir, 'state.db.sock');
    await stopProcesses([s.child]);
    rmSync(socket, { force: true });
    const { createServer } = await import('node:http');
    const impostor = createServer((_req, res) => {
      res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ drill: { eventId: 'drill-forged' } }));
    });
    await new Promise<void>((ok) => impostor.listen(socket, ok));
    cleanups.push(() => new Promise<void>((ok) => impostor.close(() => ok())));
    const { chownSync } = await import('node:fs');
    if (process.getuid?.() === 0) {
      chownSync(socket, 65534, 65534);
      const r = await cli(['drill', '--config', s.cfg, '--json']);
      expect(r.code).toBe(1);
      expect(JSON.parse(r.stdout)).toMatchObject({ passed: false, error: { code: 'CONTROL_IMPOSTOR' } });
      expect(r.stderr).toMatch(/belongs to uid 65534, not to the daemon's user \(uid 0, who owns its state\): not talking to it/);
      chownSync(socket, 0, 0);
    }
    // the daemon's own user's socket that answers in another shape is not believed either
    const forged = await cli(['drill', '--config', s.cfg, '--json']);
    expect(forged.code).toBe(1);
    expect(JSON.parse(forged.stdout)).toMatchObject({ passed: false });
    expect(forged.stdout + forged.stderr).toMatch(/answered in another shape than the daemon's/);
    expect(forged.stdout).not.toMatch(/PASSED/);
  });
});
