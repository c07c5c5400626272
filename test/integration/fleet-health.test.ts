/**
 * The fleet budget's health gate over its two real stores (Azurite through the project's Blob REST
 * client, with @azure/storage-blob only to read back what the store holds;
 * the Kubernetes API stand-in, written from the API reference since no API server can run here,
 * through the project's Kubernetes client (src/kube)), with real health checks: an HTTP endpoint on 127.0.0.1 whose
 * answer the test sets, and real commands (one that hangs, with children: none is left behind).
 * Members run in this process on a clock the test sets.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ApprovalError } from '../../src/approval/service.ts';
import { FleetConfig } from '../../src/fleet/budget/config.ts';
import { HealthConfig } from '../../src/health/config.ts';
import { HealthMonitor } from '../../src/health/monitor.ts';
import { KILL_GRACE_MS } from '../../src/lib/process-tree.ts';
import { budgetMember } from '../../testkit/fleet-members.ts';
import { PrometheusStandIn } from '../../testkit/prometheus-standin.ts';
import { KubeStandIn } from '../../testkit/kube-apiserver.ts';
import { fleetStoresPerFile, outcome, scheduledFor, STORE_KINDS } from '../../testkit/fleet-stores.ts';
import { silentLogger, waitFor } from '../helpers.ts';
import { startBridge, stopAll } from '../../testkit/harness.ts';
import { launchChromium } from '../../testkit/browser.ts';
import { fromJson } from '../../src/pipeline/cloudevent.ts';
import { readGroup } from '../../src/fleet/budget/group.ts';
import { BlobServiceClient } from '@azure/storage-blob';
import { pino } from 'pino';
import { startRelay } from '../../src/relay/relay.ts';
import { fleetKeys, fleetPeer, relayConfig } from '../../testkit/fleet.ts';

const READ_KEY = 'fleet-read-key-0123456789';

const fleetStores = fleetStoresPerFile();
const api = { by: 'test', via: 'api' } as const;
const SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;

/** Each VM's health endpoint: /<vm> answers the status the test set for it (200 unless set). */
const statuses = new Map<string, number>();
/** What the endpoint was asked: the path with its query, and the Authorization header. */
const asked: { url: string; authorization: string | undefined }[] = [];
let server: Server;
let silentServer: Server;
beforeAll(async () => {
  server = createServer((req, res) => {
    asked.push({ url: req.url ?? '', authorization: req.headers.authorization });
    res.writeHead(statuses.get(req.url?.slice(1) ?? '') ?? 200).end();
  });
  silentServer = createServer(() => undefined); // takes the request, never answers
  await Promise.all([server, silentServer].map((s) => new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve))));
});
afterAll(async () => {
  silentServer.closeAllConnections();
  await Promise.all([server, silentServer].map((s) => new Promise((resolve) => s.close(resolve))));
});
const url = (s: Server, path: string) => `http://127.0.0.1:${(s.address() as AddressInfo).port}/${path}`;

describe('health checks', () => {
  it('an HTTP endpoint must answer its status, a command must exit 0, an endpoint that never answers fails within the deadline', async () => {
    statuses.set('h-bad', 503);
    const node = process.execPath;
    const check = (h: unknown) => new HealthMonitor(HealthConfig.parse({ intervalSeconds: 1, ...(h as object) }), silentLogger).check();
    expect(await check({ http: { url: url(server, 'h-ok') }, exec: { command: [node, '-e', 'process.exit(0)'] } })).toMatchObject({
      healthy: true,
    });
    const bad = await check({ http: [{ url: url(server, 'h-ok') }, { url: url(server, 'h-bad') }] });
    expect(bad).toMatchObject({ healthy: false, detail: `${url(server, 'h-bad')} answered 503, not 200` });
    expect(await check({ http: { url: url(server, 'h-bad'), expect: 503 } })).toMatchObject({ healthy: true });
    expect(await check({ exec: { command: [node, '-e', 'process.exit(3)'] } })).toMatchObject({
      healthy: false,
      detail: expect.stringMatching(/exited 3$/),
    });
    expect(await check({ exec: { command: ['/nonexistent/kafka-in-sync'] } })).toMatchObject({
      healthy: false,
      detail: expect.stringMatching(/ENOENT/),
    });
    expect(await check({ http: { url: url(silentServer, 'x') } })).toMatchObject({ healthy: false, detail: 'no answer within 1 s' });
  });

  it('a command that hangs, with a child that hangs too, leaves no process behind: its group is killed at the deadline, with SIGKILL after a grace for what ignores SIGTERM', async () => {
    // the marker in every process's argv: a number of seconds to sleep no other process uses
    const marker = String(100_000 + Math.floor(Math.random() * 800_000));
    const left = () =>
      readdirSync('/proc')
        .filter((d) => /^\d+$/.test(d))
        .filter((pid) => {
          try {
            return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(marker);
          } catch {
            return false; // gone while read
          }
        });
    const monitor = new HealthMonitor(
      HealthConfig.parse({
        intervalSeconds: 1,
        exec: [
          { command: ['sh', '-c', `sleep ${marker} & sleep ${marker}`] },
          // ignores SIGTERM, and so do the children it starts: only SIGKILL ends them
          { command: ['sh', '-c', `trap "" TERM; sleep ${marker}.5 & sleep ${marker}.5`] },
        ],
      }),
      silentLogger,
    );
    const stop = new AbortController();
    try {
      let checks = 0;
      monitor.subscribe(() => (checks += 1));
      const running = monitor.run(stop.signal);
      await waitFor(() => left().length >= 4, 'the checks and their children running');
      await waitFor(() => checks >= 3, 'three intervals', 30_000);
      expect(monitor.state).toMatchObject({ healthy: false });
      stop.abort();
      await running;
      await waitFor(() => left().length === 0, 'no process of the checks left once the grace is over', KILL_GRACE_MS + 10_000, 100);
    } finally {
      stop.abort();
      monitor.close();
      for (const pid of left()) process.kill(Number(pid), 'SIGKILL');
    }
  });

  it('a Prometheus query must answer no sample (its HTTP API, a stand-in); a query it refuses is not healthy either', async () => {
    const prometheus = await new PrometheusStandIn().start();
    try {
      const q = 'kafka_server_replicamanager_underreplicatedpartitions > 0';
      const check = () =>
        new HealthMonitor(HealthConfig.parse({ intervalSeconds: 1, prometheus: { url: prometheus.url, query: q } }), silentLogger).check();
      expect(await check()).toMatchObject({ healthy: true });
      prometheus.series.set(q, [{ metric: { instance: 'kafka-0:9308' }, value: '3' }]);
      expect(await check()).toMatchObject({ healthy: false, detail: `${q}: 1 sample` });
      prometheus.bad.add(q);
      expect(await check()).toMatchObject({
        healthy: false,
        detail: expect.stringMatching(/^Prometheus answered 400: invalid parameter "query"/),
      });
      expect(prometheus.asked).toEqual([q, q, q]);
    } finally {
      await prometheus.close();
    }
  });

  it('a Kubernetes check wants the Node Ready and its pods Ready (the API stand-in, through the real client)', async () => {
    // no API server runs here: the stand-in is written from the API reference and speaks its paths and codes
    const kube = await new KubeStandIn().start();
    const dir = mkdtempSync(join(tmpdir(), 'health-kube-'));
    try {
      const kubeconfig = join(dir, 'kubeconfig');
      writeFileSync(kubeconfig, kube.kubeconfig());
      const vmId = '/subscriptions/s/resourceGroups/mc_rg/providers/Microsoft.Compute/virtualMachineScaleSets/aks-pool/virtualMachines/3';
      const node = kube.addNode('aks-pool-3', { providerID: `azure://${vmId}` });
      node.status = { conditions: [{ type: 'Ready', status: 'True' }] };
      kube.addPod('kafka', 'broker-0', 'aks-pool-3', { ready: true });
      kube.addPod('kube-system', 'cni-x', 'aks-pool-3', { ready: false });
      kube.addPod('batch', 'job-1', 'aks-pool-3', { phase: 'Succeeded', ready: false }); // finished: does not count
      kube.addPod('kafka', 'broker-1', 'aks-other', { ready: false }); // another Node's
      const check = (k: object, resourceId: string | null = null) =>
        new HealthMonitor(
          HealthConfig.parse({ intervalSeconds: 5, kubernetes: { kubeconfig, ...k } }),
          silentLogger,
          Date.now,
          () => resourceId,
        ).check();
      expect(await check({ nodeName: 'aks-pool-3', pods: { namespaces: ['kafka', 'batch'] } })).toMatchObject({ healthy: true });
      expect(await check({ nodeName: 'aks-pool-3' })).toMatchObject({
        healthy: false,
        detail: '1 pod on aks-pool-3 not Ready: kube-system/cni-x',
      });
      // found by its providerID, as the Azure cloud provider sets it
      expect(await check({ pods: 'none' }, vmId)).toMatchObject({ healthy: true });
      node.status = { conditions: [{ type: 'Ready', status: 'False', reason: 'KubeletNotReady' }] };
      expect(await check({ pods: 'none' }, vmId)).toMatchObject({
        healthy: false,
        detail: 'Node aks-pool-3 is not Ready (KubeletNotReady)',
      });
      expect(await check({ pods: 'none' }, null)).toMatchObject({
        healthy: false,
        detail: expect.stringMatching(/resource id is unknown/),
      });
      expect(await check({ nodeName: 'gone' })).toMatchObject({ healthy: false, detail: expect.stringMatching(/404|not found/i) });
      expect(kube.requests.some((r) => r.method === 'GET' && r.path.startsWith('/api/v1/pods'))).toBe(true);
    } finally {
      await kube.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a configuration with no check is refused, naming the key', () => {
    const r = FleetConfig.safeParse({
      group: 'g',
      maxUnavailable: 1,
      store: { type: 'kubernetes', namespace: 'n' },
      health: { settleSeconds: 5 },
    });
    expect(r.error?.issues[0]).toMatchObject({
      path: ['health'],
      message: 'needs at least one check: http (its url), exec (its command), prometheus (its url and query) or kubernetes',
    });
  });
});

describe.each(STORE_KINDS)('the health gate over the %s store', (kind) => {
  it('an unhealthy member counts against the budget; a slot is kept until the member is healthy for settleSeconds after its maintenance, or timeoutSeconds', async () => {
    const group = `health-${kind}`;
    const health = (vm: string) => ({
      health: { http: { url: url(server, `${group}-${vm}`) }, intervalSeconds: 1, settleSeconds: 60, timeoutSeconds: 600 },
    });
    const [a, b] = await Promise.all(['vm-a', 'vm-b'].map((vm) => budgetMember(fleetStores(), kind, group, vm, health(vm))));
    const t0 = Date.now();
    a!.now = t0;
    b!.now = t0;
    // vm-b is not healthy (it holds no slot): vm-a's early approval is held, and says why
    statuses.set(`${group}-vm-b`, 503);
    await Promise.all([a!.health!.check(), b!.health!.check()]);
    await Promise.all([a!.budget.heartbeat(), b!.budget.heartbeat()]);
    const ea = scheduledFor('vm-a');
    await a!.read([ea]);
    const held = await a!.budget.take(ea, api).catch((err: unknown) => err);
    expect(held).toMatchObject({ code: 'HELD', message: expect.stringMatching(/vm-b is not healthy since .* answered 503, not 200\)$/) });
    // the slot is free: what holds it is vm-b's health, and the metrics count it so
    expect((held as ApprovalError).reason).toBe('health');
    // the API's 409 names it too, apart from the holders
    expect((held as ApprovalError).body(ea.eventId)).toMatchObject({
      status: 'held',
      holders: [],
      unhealthy: [{ vm: 'vm-b', since: expect.any(String), why: expect.stringMatching(/answered 503, not 200$/) }],
    });
    // healthy again: written at once, and the slot is granted
    statuses.delete(`${group}-vm-b`);
    b!.now = t0 + 2000; // a record is written at most once a second
    await b!.health!.check();
    await b!.budget.healthChanged();
    expect(await a!.budget.take(ea, api)).toMatchObject({ slot: 'slot-0' });

    // the maintenance is over, but vm-a is not whole yet: its slot is kept
    statuses.set(`${group}-vm-a`, 503);
    a!.now = t0 + 10_000;
    await a!.health!.check();
    await a!.read([]);
    expect(a!.budget.state().slot).not.toBeNull();
    // healthy from t0 + 20 s: kept until it has been for 60 s
    statuses.delete(`${group}-vm-a`);
    a!.now = t0 + 20_000;
    await a!.health!.check();
    a!.now = t0 + 79_000;
    await a!.read([]);
    expect(a!.budget.state().slot).not.toBeNull();
    const eb = scheduledFor('vm-b');
    await b!.read([eb]);
    expect(await outcome(b!.budget.take(eb, api))).toBe('HELD');
    a!.now = t0 + 80_000;
    await a!.read([]);
    expect(a!.budget.state().slot).toBeNull();
    b!.now = t0 + 80_000;
    expect(await b!.budget.take(eb, api)).toMatchObject({ slot: 'slot-0' });

    // never healthy after its maintenance: given back at timeoutSeconds, said loudly
    statuses.set(`${group}-vm-b`, 500);
    b!.now = t0 + 90_000;
    await b!.health!.check();
    await b!.read([]);
    b!.now = t0 + 90_000 + 599_000;
    await b!.read([]);
    expect(b!.budget.state().slot).not.toBeNull();
    b!.now = t0 + 90_000 + 600_000;
    await b!.read([]);
    expect(b!.budget.state().slot).toBeNull();
    expect(b!.lines.filter((l) => l.code === 'FLEET_HEALTH_TIMEOUT')).toHaveLength(1);
  });
});

describe.each(STORE_KINDS)('zones one at a time over the %s store', (kind) => {
  it('holds an early approval while a member of another zone is in maintenance (three zones, one after another); members of one zone, or without a zone, go together', async () => {
    const group = `zones-${kind}`;
    const more = { maxUnavailable: 3, zones: 'one-at-a-time' as const };
    const [a, b, c, d] = await Promise.all(
      ['vm-a', 'vm-b', 'vm-c', 'vm-d'].map((vm) => budgetMember(fleetStores(), kind, group, vm, more)),
    );
    a!.view.vm = { ...a!.view.vm, zone: '1' };
    b!.view.vm = { ...b!.view.vm, zone: '2' };
    c!.view.vm = { ...c!.view.vm, zone: '1' };
    const [ea, eb, ec, ed] = ['vm-a', 'vm-b', 'vm-c', 'vm-d'].map((vm) => scheduledFor(vm));
    expect(await a!.budget.take(ea!, api)).toMatchObject({ slot: 'slot-0' });
    const held = await b!.budget.take(eb!, api).catch((err: unknown) => err);
    expect(held).toMatchObject({
      code: 'HELD',
      message: expect.stringMatching(/zone 1 is in maintenance \(vm-a\); the group takes one zone at a time$/),
      reason: 'zone',
    });
    expect(await c!.budget.take(ec!, api)).toMatchObject({ slot: 'slot-1' });
    // a member with no zone (a regional VM) conflicts with none
    expect(await d!.budget.take(ed!, api)).toMatchObject({ slot: 'slot-2' });
    await Promise.all([a!.read([]), c!.read([]), d!.read([])]);
    expect(await b!.budget.take(eb!, api)).toMatchObject({ slot: 'slot-0' });
    // a third zone waits for the second, then goes
    const e = await budgetMember(fleetStores(), kind, group, 'vm-e', more);
    e.view.vm = { ...e.view.vm, zone: '3' };
    const ee = scheduledFor('vm-e');
    expect(await e.budget.take(ee, api).catch((err: unknown) => err)).toMatchObject({
      code: 'HELD',
      message: expect.stringMatching(/zone 2 is in maintenance \(vm-b\); the group takes one zone at a time$/),
    });
    await b!.read([]);
    expect(await e.budget.take(ee, api)).toMatchObject({ slot: 'slot-0' });
  });
});

describe.each(STORE_KINDS)('a percentage over the %s store', (kind) => {
  it('"30%" of ten live members is three slots; of four, two (rounded up); a stale member is not counted', async () => {
    const group = `percent-${kind}`;
    const vms = Array.from({ length: 10 }, (_, i) => `p${i}`);
    const members = await Promise.all(vms.map((vm) => budgetMember(fleetStores(), kind, group, vm, { maxUnavailable: '30%' })));
    await Promise.all(members.map((m) => m.budget.heartbeat()));
    const outcomes = [];
    for (const [i, m] of members.slice(0, 4).entries()) outcomes.push(await outcome(m.budget.take(scheduledFor(vms[i]!), api)));
    expect(outcomes).toEqual(['granted', 'granted', 'granted', 'HELD']);
    expect(members[3]!.budget.state().maxUnavailable).toBe(3);
    expect((await members[3]!.budget.take(scheduledFor('p3'), api).catch((e: unknown) => e)) as Error).toMatchObject({
      message: expect.stringMatching(/^group percent-\w+ allows 3 members in maintenance at once/),
    });
    // six of them stop (their records go stale): 30 % of four is 1.2, rounded up two, and the three down already fill it
    const later = Date.now() + 10 * 60_000;
    for (const m of [...members.slice(0, 3), members[9]!]) {
      m.now = later;
      await m.budget.heartbeat();
    }
    members[9]!.now = later;
    expect(await outcome(members[9]!.budget.take(scheduledFor('p9'), api))).toBe('HELD');
    expect(members[9]!.budget.state().maxUnavailable).toBe(2);
  });

  it('refuses a percentage out of range, naming the key', () => {
    const store = { type: 'kubernetes', namespace: 'n' };
    for (const bad of ['0%', '101%', '20 %', 'half'])
      expect(FleetConfig.safeParse({ group: 'g', maxUnavailable: bad, store }).error?.issues[0]?.path).toEqual(['maxUnavailable']);
    expect(FleetConfig.parse({ group: 'g', maxUnavailable: '100%', store }).maxUnavailable).toBe('100%');
  });
});

describe('the health gate in a running bridge', () => {
  afterEach(() => stopAll());

  it("says a check's URL by its origin and path alone: its password and query reach the endpoint, never the member record, the relay's read API or a log line", async () => {
    const group = 'health-url';
    // http on 127.0.0.1: the same URL as https://user:secret@host/path?token=abc, a peer this test can run
    const endpoint = url(server, `${group}-vm-s`);
    const configured = endpoint.replace('http://', 'http://user:secret@') + '?token=abc#part';
    statuses.set(`${group}-vm-s?token=abc`, 503);
    // a container of its own: the relay reads all of it
    const store = { ...fleetStores().config('blob'), container: group };
    const fleet = {
      group,
      maxUnavailable: 1,
      store,
      heartbeatSeconds: 30,
      health: { http: { url: configured }, intervalSeconds: 1 },
    };
    const peer = await fleetPeer();
    const relayLines: string[] = [];
    const relay = await startRelay(
      relayConfig(peer, fleetKeys(), { fleet: { store, cacheMs: 0 }, readKeys: [READ_KEY] }),
      pino({ level: 'debug' }, { write: (line: string) => void relayLines.push(line) }),
      { host: '127.0.0.1', port: 0 },
    );
    try {
      const h = await startBridge({
        sim: { vmName: 'vm-s', peers: [] },
        sinks: (d) => [{ name: 'audit', type: 'file', path: join(d, 'e.jsonl') }],
        config: { fleet, log: { level: 'debug' } },
      });
      const said = `${endpoint} answered 503, not 200`;
      // the member record, as the store holds it (its blob and the copy in its metadata), read with Azure's own client
      const container = BlobServiceClient.fromConnectionString(
        (fleetStores().config('blob') as { connectionString: string }).connectionString,
      ).getContainerClient(group);
      const stored = async () => {
        const texts: string[] = [];
        if (!(await container.exists())) return '';
        for await (const b of container.listBlobsFlat({ prefix: `${group}/member-`, includeMetadata: true })) {
          texts.push((await container.getBlobClient(b.name).downloadToBuffer()).toString('utf8'));
          texts.push(...Object.values(b.metadata ?? {}).map((v) => Buffer.from(v, 'base64').toString('utf8')));
        }
        return texts.join('\n');
      };
      const record = await waitFor(
        async () => ((await stored()).includes(said) ? stored() : null),
        'the detail in the member record',
        15_000,
        200,
      );
      const read = await fetch(`${relay.url}/v1/fleet`, {
        headers: { authorization: `Bearer ${READ_KEY}` },
        signal: AbortSignal.timeout(10_000),
      });
      const api = await read.text();
      expect(read.status).toBe(200);
      expect(JSON.parse(api)).toMatchObject({ members: [{ vm: 'vm-s', health: { healthy: false, detail: said } }] });
      const logs = JSON.stringify(h.lines);
      expect(logs).toContain(said);
      for (const text of [record, api, logs, relayLines.join('\n')]) {
        expect(text).not.toContain('secret');
        expect(text).not.toContain('token=abc');
        expect(text).not.toContain('#part');
      }
      // the endpoint itself was asked with all of it: the password (basic authorization) and the query
      const mine = asked.filter((a) => a.url.startsWith(`/${group}-vm-s`));
      expect(mine.length).toBeGreaterThan(0);
      for (const a of mine)
        expect(a).toEqual({ url: `/${group}-vm-s?token=abc`, authorization: `Basic ${Buffer.from('user:secret').toString('base64')}` });
    } finally {
      await relay.close();
      await peer.close();
    }
  }, 60_000);

  it("checks its health on its own, writes it in its record at once when it changes, and another member's approval page names it as the reason", async () => {
    const group = 'health-bridge';
    const fleet = {
      group,
      maxUnavailable: 1,
      store: fleetStores().config('blob'),
      heartbeatSeconds: 30,
      health: { http: { url: url(server, `${group}-vm-h`) }, intervalSeconds: 1, settleSeconds: 5 },
    };
    const h = await startBridge({
      sim: { vmName: 'vm-h', peers: [] },
      sinks: (d) => [{ name: 'audit', type: 'file', path: join(d, 'e.jsonl') }],
      config: { fleet },
    });
    const config = FleetConfig.parse(fleet);
    const healthOf = async () => (await readGroup(config)).members.find((m) => m.vm === 'vm-h')?.health;
    await waitFor(async () => (await healthOf())?.healthy === true, 'vm-h healthy in its record', 15_000, 200);
    statuses.set(`${group}-vm-h`, 503);
    // well before the next heartbeat (30 s): the change is written when it is seen
    const sick = await waitFor(
      async () => ((await healthOf())?.healthy === false ? healthOf() : null),
      'vm-h not healthy in its record',
      10_000,
      200,
    );
    expect(sick).toMatchObject({ healthy: false, detail: expect.stringMatching(/answered 503, not 200$/) });
    expect(h.bridge.fleet).not.toBeNull();

    // another member's approval page, in Chromium: the click is held, and the page names vm-h as the reason
    const p = await startBridge({
      sim: { vmName: 'vm-p', peers: [] },
      sinks: (d) => [{ name: 'audit', type: 'file', path: join(d, 'e.jsonl') }],
      config: {
        fleet: { ...fleet, health: { http: { url: url(server, `${group}-vm-p`) }, intervalSeconds: 1, settleSeconds: 5 } },
        approval: { secret: SECRET, publicUrl: 'http://127.0.0.1:1' },
        server: { listen: '127.0.0.1:0' },
      },
    });
    const e = p.sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000, startedMs: 600_000 });
    const scheduled = await waitFor(
      () => p.bridge.store.journal.all().find((j) => j.id === `${e.eventId}/scheduled`),
      'the scheduled event',
    );
    const link = p.bridge.approvalLinks!.link(fromJson(scheduled.json))!.replace('http://127.0.0.1:1', p.bridge.approvalServerUrl!);
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      await page.goto(link);
      await page.locator('#approve').click();
      await page.waitForSelector('.card.err');
      expect(await page.locator('h1').innerText()).toBe("Held: the group's maintenance budget is used up");
      expect(await page.locator('.card p').innerText()).toMatch(
        /none in maintenance; vm-h is not healthy since .* answered 503, not 200\)/,
      );
      expect(p.sim.startRequests).toHaveLength(0);
    } finally {
      await browser.close();
    }
  }, 60_000);
});
