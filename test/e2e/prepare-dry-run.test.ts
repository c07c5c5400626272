/**
 * `se-bridge prepare --dry-run`: the CLI as a real process, its kubernetes sink through the real
 * the project's Kubernetes client (src/kube) against testkit/kube-apiserver.ts, a stand-in for the Kubernetes API
 * server written from its API reference (no API server can run on the machines the tests run
 * on). The stand-in answers dry-run evictions (dryRun=All) as the real one does: the same checks,
 * the same statuses, nothing changed.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { KubeStandIn } from '../../testkit/kube-apiserver.ts';
import { ImdsSimulator } from '../../src/simulator/server.ts';
import { freePort, tempDir } from '../helpers.ts';
import { cli } from './process.ts';

let api: KubeStandIn | null = null;
let sim: ImdsSimulator | null = null;
const dirs: { cleanup(): void }[] = [];
afterEach(async () => {
  await api?.close();
  await sim?.close();
  api = sim = null;
  for (const d of dirs.splice(0)) d.cleanup();
});

interface PlannedPod {
  pod: string;
  action: string;
  grace: number | null;
  ownGrace: number | null;
  why: string | null;
}
interface Report {
  ready: boolean;
  noticeSeconds: number | null;
  rehearsals: {
    sink: string;
    type: string;
    ready: boolean;
    node: string;
    aks: boolean;
    changes: Record<string, boolean>;
    pods: PlannedPod[];
    error?: { code: string; message: string };
  }[];
}

/** configWith writes a configuration with a file sink and a kubernetes sink (`drain` and more merged in). */
function configWith(kube: KubeStandIn, sink: Record<string, unknown>, more: Record<string, unknown> = {}): string {
  const dir = tempDir();
  dirs.push(dir);
  const kubeconfig = join(dir.path, 'kubeconfig');
  writeFileSync(kubeconfig, kube.kubeconfig());
  const config = {
    imds: { endpoint: 'http://127.0.0.1:9' },
    state: { path: join(dir.path, 'state.db') },
    observability: { listen: 'off' },
    sinks: [
      { name: 'audit', type: 'file', path: join(dir.path, 'events.jsonl') },
      { name: 'node', type: 'kubernetes', kubeconfig, ...sink },
    ],
    ...more,
  };
  const path = join(dir.path, 'bridge.yaml');
  writeFileSync(path, JSON.stringify(config));
  return path;
}

/** A node with one pod of every kind a drain tells apart. */
function nodeWithEveryKind(kube: KubeStandIn): void {
  kube.addNode('aks-node-0', { taints: [{ key: 'dedicated', value: 'web', effect: 'NoSchedule' }] });
  kube.addPod('web', 'web-0', 'aks-node-0', { owner: 'ReplicaSet', grace: 10 });
  kube.addPod('web', 'web-1', 'aks-node-0', { owner: 'ReplicaSet', grace: 60 });
  kube.addPod('web', 'db-0', 'aks-node-0', { owner: 'StatefulSet' });
  kube.addPod('web', 'cache-0', 'aks-node-0', { owner: 'ReplicaSet', emptyDir: true });
  kube.addPod('tools', 'debug-shell', 'aks-node-0', {});
  kube.addPod('batch', 'report-28', 'aks-node-0', { phase: 'Succeeded' });
  kube.addPod('kube-system', 'kube-proxy-abc', 'aks-node-0', { owner: 'DaemonSet' });
  kube.addPod('kube-system', 'etcd-aks-node-0', 'aks-node-0', { mirror: true });
  kube.addPod('web', 'elsewhere', 'aks-node-1', { owner: 'ReplicaSet' });
  kube.budgets.set('web/db-0', 1000);
  kube.budgetNames.set('web/db-0', 'db-pdb');
}

const byPod = (pods: readonly PlannedPod[]) => new Map(pods.map((p) => [p.pod, p]));

describe('se-bridge prepare --dry-run', () => {
  it('lists what a drain would evict (with its grace), skip and why, and what blocks it, through dry-run evictions; nothing changes', async () => {
    api = await new KubeStandIn().start();
    nodeWithEveryKind(api);
    const node = structuredClone(api.nodes.get('aks-node-0')!);
    const config = configWith(api, { nodeName: 'aks-node-0', drain: { gracePeriodSeconds: 30 } });

    const r = await cli(['prepare', '--dry-run', '--sink', 'node', '--notice', '30s', '--config', config, '--json']);
    expect(r.stderr).toBe('');
    expect(r.code, 'blocked: exit 1').toBe(1);
    const report = JSON.parse(r.stdout) as Report;
    expect(report.ready).toBe(false);
    expect(report.noticeSeconds).toBe(30);
    const [k] = report.rehearsals;
    expect(k).toMatchObject({ sink: 'node', type: 'kubernetes', node: 'aks-node-0', ready: false, aks: false });
    expect(k!.changes).toEqual({ cordon: true, taint: true, label: true });
    const pods = byPod(k!.pods);
    expect([...pods.keys()].sort()).toEqual([
      'batch/report-28',
      'kube-system/etcd-aks-node-0',
      'kube-system/kube-proxy-abc',
      'tools/debug-shell',
      'web/cache-0',
      'web/db-0',
      'web/web-0',
      'web/web-1',
    ]);
    // web-0's own 10 s fits; web-1's own 60 s is clamped to end 5 s before a NotBefore 30 s away
    expect(pods.get('web/web-0')).toMatchObject({ action: 'evict', grace: 10, ownGrace: 10, why: null });
    expect(pods.get('web/web-1')).toMatchObject({ action: 'evict', ownGrace: 60 });
    expect(pods.get('web/web-1')!.grace).toBeGreaterThanOrEqual(20);
    expect(pods.get('web/web-1')!.grace).toBeLessThanOrEqual(25);
    expect(pods.get('web/web-1')!.why).toMatch(/ends 5 s before NotBefore/);
    expect(pods.get('batch/report-28')).toMatchObject({ action: 'evict' });
    expect(pods.get('kube-system/kube-proxy-abc')).toMatchObject({ action: 'skip', why: expect.stringMatching(/DaemonSet/) });
    expect(pods.get('kube-system/etcd-aks-node-0')).toMatchObject({ action: 'skip', why: expect.stringMatching(/mirror/) });
    expect(pods.get('tools/debug-shell')).toMatchObject({ action: 'block', why: expect.stringMatching(/no controller.*drain\.force/) });
    expect(pods.get('web/cache-0')).toMatchObject({ action: 'block', why: expect.stringMatching(/emptyDir.*drain\.deleteEmptyDirData/) });
    // the budget's block is the API server's own answer, naming the budget
    expect(pods.get('web/db-0')).toMatchObject({
      action: 'block',
      why: expect.stringMatching(/disruption budget.*db-pdb needs 1 healthy/),
    });

    // asked as dry runs, and nothing changed: no eviction, no deletion, no patch, no Event, the budget untouched
    expect(Object.fromEntries(api.dryRuns)).toEqual({
      'web/web-0': [201],
      'web/web-1': [201],
      'web/db-0': [429],
      'batch/report-28': [201],
    });
    const evictions = api.requests.filter((q) => q.path.includes('/eviction'));
    expect(evictions).toHaveLength(4);
    for (const q of evictions) {
      expect(q.path).toContain('dryRun=All');
      expect((q.body as { deleteOptions: { dryRun: string[] } }).deleteOptions.dryRun).toEqual(['All']);
    }
    expect(api.evictions.size).toBe(0);
    expect(api.deletions.size).toBe(0);
    expect(api.requests.filter((q) => q.method !== 'GET' && !q.path.includes('/eviction'))).toEqual([]);
    expect(api.events).toEqual([]);
    expect(api.budgets.get('web/db-0')).toBe(1000);
    expect(api.nodes.get('aks-node-0')).toEqual(node);
    expect(api.podsOn('aks-node-0')).toHaveLength(8);

    // the same as a table
    const text = await cli(['prepare', '--dry-run', '--sink', 'node', '--config', config]);
    expect(text.code).toBe(1);
    expect(text.stdout).toMatch(
      /Node aks-node-0: a preparation now would cordon it, add the taint scheduledevents\.azure\.com\/maintenance/,
    );
    expect(text.stdout).toMatch(/^ACTION\s+POD\s+GRACE\s+WHY$/m);
    expect(text.stdout).toMatch(/^evict\s+web\/web-1\s+30 s\s+its own is 60 s; at most drain\.gracePeriodSeconds$/m);
    expect(text.stdout).toMatch(/^block\s+web\/db-0\s+-\s+its disruption budget holds it: .*db-pdb/m);
    expect(text.stdout).toMatch(/^skip\s+kube-system\/kube-proxy-abc\s+-\s+DaemonSet pod/m);
    expect(text.stdout).toMatch(
      /The drain would be blocked by 3 pods: tools\/debug-shell, web\/cache-0, web\/db-0 \(3 pods would be evicted, 2 skipped\)\./,
    );
    expect(api.evictions.size).toBe(0);
  });

  it('with force, deleteEmptyDirData and onDeadline: delete nothing blocks: exit 0, the held pod deleted near the deadline', async () => {
    api = await new KubeStandIn().start();
    nodeWithEveryKind(api);
    const config = configWith(api, {
      nodeName: 'aks-node-0',
      drain: { force: true, deleteEmptyDirData: true, onDeadline: 'delete', deadlineMarginSeconds: 10 },
    });
    const r = await cli(['prepare', '--dry-run', '--config', config, '--json']);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const report = JSON.parse(r.stdout) as Report;
    expect(report.ready).toBe(true);
    expect(
      report.rehearsals.map((x) => x.sink),
      'every sink that rehearses: the file sink does not',
    ).toEqual(['node']);
    const pods = byPod(report.rehearsals[0]!.pods);
    expect(pods.get('tools/debug-shell')).toMatchObject({ action: 'evict' });
    expect(pods.get('web/cache-0')).toMatchObject({ action: 'evict' });
    expect(pods.get('web/db-0')).toMatchObject({
      action: 'delete',
      grace: 30,
      why: expect.stringMatching(/holds it now .*db-pdb.*40 s before NotBefore, deleted past it \(drain\.onDeadline: delete\)/),
    });
    expect(api.evictions.size + api.deletions.size).toBe(0);
  });

  it("finds the Node by this VM's providerID from instance metadata, and says when AKS's node auto-drain acts on it", async () => {
    sim = new ImdsSimulator({ vmName: 'vm0', tickMs: 10 });
    await sim.listen();
    api = await new KubeStandIn().start();
    const resourceId = sim.compute().resourceId!;
    api.addNode('aks-node-7', { providerID: `azure://${resourceId}`, unschedulable: true });
    api.nodes.get('aks-node-7')!.status = { conditions: [{ type: 'VMEventScheduled', status: 'True' }] };
    api.addNode('aks-node-8', {
      providerID: 'azure:///subscriptions/x/resourceGroups/y/providers/Microsoft.Compute/virtualMachines/other',
    });
    api.addPod('web', 'web-0', 'aks-node-7', { owner: 'ReplicaSet' });
    const config = configWith(api, {}, { imds: { endpoint: sim.url } });
    const r = await cli(['prepare', '--dry-run', '--config', config], { NODE_NAME: '' });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/Node aks-node-7: a preparation now would leave its cordon \(it is cordoned already\)/);
    expect(r.stdout).toMatch(/AKS's node auto-drain acts on this node .*se-bridge would evict nothing/);
    expect(r.stdout).toMatch(/^evict\s+web\/web-0\s+30 s/m);
    expect(r.stdout).toMatch(/The drain would empty the node: 1 pod would be evicted, 0 skipped\./);
  });

  it('a call the API refuses is a failure naming it (exit 1); a usage problem exits 2 and asks nothing', async () => {
    api = await new KubeStandIn({ forbid: ['pods/eviction'] }).start();
    nodeWithEveryKind(api);
    const config = configWith(api, { nodeName: 'aks-node-0' });
    const forbidden = await cli(['prepare', '--dry-run', '--config', config, '--json']);
    expect(forbidden.code).toBe(1);
    const report = JSON.parse(forbidden.stdout) as Report;
    expect(report.rehearsals[0]).toMatchObject({ sink: 'node', ready: false, error: { code: 'KUBE_FORBIDDEN' } });
    expect(report.rehearsals[0]!.error!.message).toMatch(/dry-run evict pod .*forbidden by RBAC \(403\)/);

    const asked = api.requests.length;
    const cases: [string[], RegExp][] = [
      [['prepare', '--config', config], /add --dry-run/],
      [
        ['prepare', '--dry-run', '--sink', 'audit', '--config', config],
        /sink "audit" is a file sink that prepares nothing; the preparations are node/,
      ],
      [['prepare', '--dry-run', '--sink', 'nope', '--config', config], /no sink is named "nope"; the sinks are audit, node/],
      [['prepare', '--dry-run', '--notice', 'soon', '--config', config], /--notice soon: a duration such as 30s/],
    ];
    for (const [args, said] of cases) {
      const r = await cli(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(said);
    }
    expect(api.requests.length, 'a usage problem asks the API nothing').toBe(asked);
  });

  it('rehearses every preparation the VM has: a probe (what it would answer, for how long, and what it answers now), a hook (what it would run); JSON with --json, also for a refusal', async () => {
    const dir = tempDir();
    dirs.push(dir);
    const port = await freePort();
    const mark = join(dir.path, 'ran.txt');
    const config = join(dir.path, 'bridge.yaml');
    writeFileSync(
      config,
      JSON.stringify({
        imds: { endpoint: 'http://127.0.0.1:9' },
        state: { path: join(dir.path, 'state.db') },
        observability: { listen: 'off' },
        sinks: [
          { name: 'audit', type: 'file', path: join(dir.path, 'events.jsonl') },
          { name: 'lb', type: 'probe', listen: `127.0.0.1:${port}`, drainSeconds: 15 },
          { name: 'drain', type: 'exec', command: ['/usr/bin/touch', mark], prepare: true },
        ],
      }),
    );
    // no daemon runs: the probe says so
    const text = await cli(['prepare', '--dry-run', '--config', config]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(
      /sink lb \(probe\)\nThe probe would answer 503 on \/probe for 15 s before counting as out of the load balancer/,
    );
    expect(text.stdout).toMatch(new RegExp(`no probe answers at 127\\.0\\.0\\.1:${port} now`));
    expect(text.stdout).toMatch(/sink drain \(exec\)\nIt would run \/usr\/bin\/touch .*ran\.txt; a rehearsal runs nothing/);
    expect(existsSync(mark)).toBe(false);

    // a probe that answers (the daemon's, here one standing in for it)
    const { createServer } = await import('node:http');
    const standIn = createServer((_q, r) => r.writeHead(200).end('in-service'));
    await new Promise<void>((ok) => standIn.listen(port, '127.0.0.1', ok));
    try {
      const json = await cli(['prepare', '--dry-run', '--config', config, '--json']);
      expect(json.code, json.stderr).toBe(0);
      const report = JSON.parse(json.stdout) as { ready: boolean; rehearsals: Record<string, unknown>[] };
      expect(report.ready).toBe(true);
      expect(report.rehearsals).toEqual([
        expect.objectContaining({ sink: 'lb', type: 'probe', ready: true, drainSeconds: 15, answersNow: 200 }),
        expect.objectContaining({ sink: 'drain', type: 'exec', ready: true, command: ['/usr/bin/touch', mark] }),
      ]);
    } finally {
      await new Promise<void>((ok) => standIn.close(() => ok()));
    }
    const refused = await cli(['prepare', '--dry-run', '--sink', 'audit', '--config', config, '--json']);
    expect(refused.code).toBe(2);
    expect(JSON.parse(refused.stdout)).toEqual({
      ready: false,
      error: { code: 'USAGE', message: expect.stringMatching(/prepares nothing/) },
    });
    expect(existsSync(mark)).toBe(false);
  });
});
