/**
 * This VM's health checks (src/health/monitor.ts), in this process, on a clock the test sets:
 * since when the member is healthy or not (the moment its state last changed, never the last
 * check), and what each kind of check says against a peer that answers, refuses, hangs or
 * answers garbage. The peers are real: an HTTP server on 127.0.0.1 port 0 whose answers the test
 * sets (a health endpoint, or Prometheus's query API as its reference describes it), a port
 * nothing listens on, real commands, and the Kubernetes API stand-in (written from the API
 * reference, since no API server can run here) through the project's Kubernetes client.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HealthConfig } from '../../src/health/config.ts';
import { HealthMonitor } from '../../src/health/monitor.ts';
import { KubeStandIn } from '../../testkit/kube-apiserver.ts';
import { captureLogger, freePort, silentLogger, waitFor } from '../helpers.ts';

/** What the peer answers on a path: a status and a body, or nothing at all (it hangs). */
type Answer = { status: number; body?: string } | 'hang';
const answers = new Map<string, Answer>();
/** Every request the peer took: its path with its query, and whether its connection has closed. */
const asked: { url: string; closed: boolean }[] = [];
let server: Server;
let base: string;
const hanging = new Set<ServerResponse>();

beforeAll(async () => {
  server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const seen = { url: req.url ?? '', closed: false };
    asked.push(seen);
    res.on('close', () => (seen.closed = true));
    const path = new URL(req.url ?? '/', 'http://127.0.0.1').pathname;
    const answer = answers.get(path) ?? { status: 200 };
    if (answer === 'hang') return void hanging.add(res);
    res.writeHead(answer.status, { 'content-type': 'application/json' }).end(answer.body ?? '');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/** A monitor of `checks` (each with a deadline of 10 s unless they say a shorter interval), on a clock the test moves. */
function monitorOf(checks: Record<string, unknown>, logger = silentLogger) {
  const clock = { now: Date.parse('2026-11-28T10:00:00Z') };
  const monitor = new HealthMonitor(HealthConfig.parse({ intervalSeconds: 60, ...checks }), logger, () => clock.now);
  return { monitor, clock };
}
const iso = (ms: number) => new Date(ms).toISOString();

describe('since when the member is healthy', () => {
  it('since is the moment the state last changed, not the last check; the detail follows every check', async () => {
    const { logger, lines } = captureLogger();
    const { monitor, clock } = monitorOf({ http: { url: `${base}/since` } }, logger);
    try {
      const t0 = clock.now;
      expect(monitor.state).toBeNull();
      expect(monitor.healthyFor()).toBe(0);
      expect(await monitor.check()).toEqual({ healthy: true, since: iso(t0) });
      clock.now = t0 + 30_000;
      expect(await monitor.check()).toEqual({ healthy: true, since: iso(t0) });
      expect(monitor.healthyFor()).toBe(30_000);
      expect(monitor.healthyFor(t0 + 45_000)).toBe(45_000);
      // a clock read before `since` (another member's, a step back) is never a negative time
      expect(monitor.healthyFor(t0 - 5_000)).toBe(0);

      answers.set('/since', { status: 503 });
      clock.now = t0 + 60_000;
      const sick = { healthy: false, since: iso(t0 + 60_000), detail: `${base}/since answered 503, not 200` };
      expect(await monitor.check()).toEqual(sick);
      expect(monitor.healthyFor()).toBe(0);
      // still not healthy, for another reason: since stays, the detail is the new one
      answers.set('/since', { status: 500 });
      clock.now = t0 + 90_000;
      expect(await monitor.check()).toEqual({ ...sick, detail: `${base}/since answered 500, not 200` });
      expect(monitor.state).toEqual({ ...sick, detail: `${base}/since answered 500, not 200` });

      answers.delete('/since');
      clock.now = t0 + 120_000;
      const well = await monitor.check();
      expect(well).toEqual({ healthy: true, since: iso(t0 + 120_000) });
      expect(well).not.toHaveProperty('detail');
      clock.now = t0 + 125_000;
      expect(monitor.healthyFor()).toBe(5_000);
      // a line at each change, none at a check that changes nothing
      expect(lines.map((l) => [l.msg, l.healthy, l.detail])).toEqual([
        ['fleet budget: this member is healthy', true, []],
        ['fleet budget: this member is not healthy', false, [`${base}/since answered 503, not 200`]],
        ['fleet budget: this member is healthy', true, []],
      ]);
      // what the fleet budget reads of it: the checks as configured
      expect(monitor.config).toMatchObject({ intervalSeconds: 60, settleSeconds: 120, http: [{ url: `${base}/since`, expect: 200 }] });
    } finally {
      answers.delete('/since');
      monitor.close();
    }
  });

  it('a monitor that finds the member unhealthy at its first check says so from that moment', async () => {
    answers.set('/first', { status: 404 });
    const { monitor, clock } = monitorOf({ http: { url: `${base}/first` } });
    try {
      expect(await monitor.check()).toEqual({ healthy: false, since: iso(clock.now), detail: `${base}/first answered 404, not 200` });
      expect(monitor.healthyFor(clock.now + 60_000)).toBe(0);
    } finally {
      answers.delete('/first');
      monitor.close();
    }
  });

  it('every subscriber hears every check, until it unsubscribes', async () => {
    const { monitor, clock } = monitorOf({ http: { url: `${base}/heard` } });
    try {
      const heard: unknown[] = [];
      const other: unknown[] = [];
      const stop = monitor.subscribe((s) => heard.push(s));
      monitor.subscribe((s) => other.push(s));
      await monitor.check();
      clock.now += 1000;
      await monitor.check();
      expect(heard).toEqual([
        { healthy: true, since: iso(clock.now - 1000) },
        { healthy: true, since: iso(clock.now - 1000) },
      ]);
      stop();
      await monitor.check();
      expect(heard).toHaveLength(2);
      expect(other).toHaveLength(3);
    } finally {
      monitor.close();
    }
  });

  it('run checks every interval until its signal aborts, then returns', async () => {
    const { monitor } = monitorOf({ http: { url: `${base}/loop` }, intervalSeconds: 1 });
    const stop = new AbortController();
    try {
      let checks = 0;
      monitor.subscribe(() => (checks += 1));
      const running = monitor.run(stop.signal);
      await waitFor(() => checks >= 2, 'two checks, an interval apart');
      stop.abort();
      await expect(running).resolves.toBeUndefined();
      const after = checks;
      // a check after the loop ended is heard; the loop itself checks no more
      await monitor.check();
      expect(checks).toBe(after + 1);
      expect(asked.filter((a) => a.url === '/loop')).toHaveLength(after + 1);
    } finally {
      stop.abort();
      monitor.close();
    }
  });

  it('a loop whose signal is aborted before it starts checks nothing', async () => {
    const { monitor } = monitorOf({ http: { url: `${base}/never` } });
    try {
      await monitor.run(AbortSignal.abort());
      expect(monitor.state).toBeNull();
      expect(asked.filter((a) => a.url === '/never')).toEqual([]);
    } finally {
      monitor.close();
    }
  });
});

describe('an HTTP check', () => {
  it('a port nothing listens on is not healthy, and says why', async () => {
    const port = await freePort();
    const { monitor } = monitorOf({ http: { url: `http://127.0.0.1:${port}/health` } });
    try {
      expect(await monitor.check()).toMatchObject({ healthy: false, detail: expect.stringMatching(/ECONNREFUSED/) });
    } finally {
      monitor.close();
    }
  });

  it('an endpoint that never answers fails at the deadline, the interval when it is shorter than 10 s, and its request is abandoned', async () => {
    answers.set('/hang', 'hang');
    const { monitor } = monitorOf({ http: { url: `${base}/hang` }, intervalSeconds: 1 });
    try {
      expect(await monitor.check()).toMatchObject({ healthy: false, detail: 'no answer within 1 s' });
      await waitFor(() => asked.find((a) => a.url === '/hang')?.closed, 'the abandoned request closed');
    } finally {
      answers.delete('/hang');
      monitor.close();
    }
  });

  it('stopped from outside (the daemon stopping), a check ends at once, not at its deadline', async () => {
    answers.set('/stopped', 'hang');
    const { monitor } = monitorOf({ http: { url: `${base}/stopped` }, intervalSeconds: 3600 });
    const stop = new AbortController();
    try {
      const checking = monitor.check(stop.signal);
      await waitFor(() => asked.some((a) => a.url === '/stopped'), 'the request taken');
      stop.abort();
      const state = await checking;
      expect(state.healthy).toBe(false);
      expect(state.detail).not.toMatch(/no answer within/);
    } finally {
      answers.delete('/stopped');
      monitor.close();
    }
  });

  it('every check runs, and all that fail are said, one after another', async () => {
    answers.set('/a', { status: 500 });
    answers.set('/b', { status: 502 });
    const { monitor, clock } = monitorOf({ http: [{ url: `${base}/a` }, { url: `${base}/ok` }, { url: `${base}/b` }] });
    try {
      const since = iso(clock.now);
      expect(await monitor.check()).toEqual({
        healthy: false,
        since,
        detail: `${base}/a answered 500, not 200; ${base}/b answered 502, not 200`,
      });
      // still failing, for other reasons: all of them said
      answers.set('/a', { status: 501 });
      clock.now += 10_000;
      expect(await monitor.check()).toEqual({
        healthy: false,
        since,
        detail: `${base}/a answered 501, not 200; ${base}/b answered 502, not 200`,
      });
    } finally {
      answers.delete('/a');
      answers.delete('/b');
      monitor.close();
    }
  });

  it('an answer larger than a health endpoint needs is cut, and its status still counts', async () => {
    answers.set('/big', { status: 200, body: 'x'.repeat(64 * 1024) });
    const { monitor } = monitorOf({ http: { url: `${base}/big` } });
    try {
      expect(await monitor.check()).toMatchObject({ healthy: true });
    } finally {
      answers.delete('/big');
      monitor.close();
    }
  });
});

describe('a Prometheus check', () => {
  const query = 'up{job="kafka"} == 0';
  const prometheus = (url: string) => monitorOf({ prometheus: { url, query } }).monitor;
  const said = async (answer: Answer, url = `${base}/prom`) => {
    answers.set('/prom/api/v1/query', answer);
    const m = prometheus(url);
    try {
      return await m.check();
    } finally {
      answers.delete('/prom/api/v1/query');
      m.close();
    }
  };
  const vector = (n: number) =>
    JSON.stringify({
      status: 'success',
      data: { resultType: 'vector', result: Array.from({ length: n }, (_, i) => ({ metric: { i: String(i) }, value: [1, '1'] })) },
    });

  it("asks the server's query API under its path, with or without a slash at its end, and counts each series as a sample", async () => {
    for (const url of [`${base}/prom`, `${base}/prom/`]) {
      const before = asked.length;
      expect(await said({ status: 200, body: vector(0) }, url)).toMatchObject({ healthy: true });
      expect(asked.slice(before).map((a) => a.url)).toEqual([`/prom/api/v1/query?query=${encodeURIComponent(query).replace(/%20/g, '+')}`]);
    }
    expect(await said({ status: 200, body: vector(1) })).toMatchObject({ healthy: false, detail: `${query}: 1 sample` });
    expect(await said({ status: 200, body: vector(2) })).toMatchObject({ healthy: false, detail: `${query}: 2 samples` });
    const matrix = JSON.stringify({ status: 'success', data: { resultType: 'matrix', result: [{ metric: {}, values: [[1, '1']] }] } });
    expect(await said({ status: 200, body: matrix })).toMatchObject({ healthy: false, detail: `${query}: 1 sample` });
    // a scalar or a string is no series: nothing is wrong
    const scalar = JSON.stringify({ status: 'success', data: { resultType: 'scalar', result: [1, '0'] } });
    expect(await said({ status: 200, body: scalar })).toMatchObject({ healthy: true });
    const string = JSON.stringify({ status: 'success', data: { resultType: 'string', result: [1, 'ok'] } });
    expect(await said({ status: 200, body: string })).toMatchObject({ healthy: true });
  });

  it('an error the API answers is said with its words; an answer that is not JSON, with its status', async () => {
    const refused = JSON.stringify({ status: 'error', errorType: 'bad_data', error: 'parse error at char 3' });
    expect(await said({ status: 400, body: refused })).toMatchObject({
      healthy: false,
      detail: 'Prometheus answered 400: parse error at char 3',
    });
    expect(await said({ status: 503, body: JSON.stringify({ status: 'error' }) })).toMatchObject({
      healthy: false,
      detail: 'Prometheus answered 503: error',
    });
    expect(await said({ status: 200, body: JSON.stringify({ status: 'error', error: 'query timed out' }) })).toMatchObject({
      healthy: false,
      detail: 'Prometheus answered 200: query timed out',
    });
    // a success in its body, under a status that is not 200 (a proxy in front of it), is not believed
    expect(await said({ status: 500, body: vector(0) })).toMatchObject({ healthy: false, detail: 'Prometheus answered 500: success' });
    expect(await said({ status: 502, body: '<html>Bad Gateway</html>' })).toMatchObject({
      healthy: false,
      detail: 'Prometheus answered 502 with no JSON',
    });
    expect(await said({ status: 200, body: '{}' })).toMatchObject({ healthy: false, detail: 'Prometheus answered 200: no status' });
  });

  it('a success that carries no result its query API describes is not healthy: garbage never passes for "no sample"', async () => {
    const garbage = 'Prometheus answered 200 with no result its query API describes';
    for (const body of [
      { status: 'success' },
      { status: 'success', data: null },
      { status: 'success', data: { resultType: 'vector' } },
      { status: 'success', data: { resultType: 'vector', result: 'none' } },
      { status: 'success', data: { resultType: 'matrix', result: { length: 0 } } },
      { status: 'success', data: { resultType: 'table', result: [] } },
      { status: 'success', data: { result: [] } },
    ])
      expect(await said({ status: 200, body: JSON.stringify(body) }), JSON.stringify(body)).toMatchObject({
        healthy: false,
        detail: garbage,
      });
    for (const body of ['null', '"success"', '[]', '7'])
      expect(await said({ status: 200, body }), body).toMatchObject({ healthy: false, detail: 'Prometheus answered 200: no status' });
  });

  it('what a server says of its error reaches the detail one line long and cut, whatever it holds', async () => {
    const long = JSON.stringify({ status: 'error', error: `line one\nline two\u0007${'x'.repeat(10_000)}` });
    const state = await said({ status: 422, body: long });
    expect(state.detail).toMatch(/^Prometheus answered 422: line one line two x+…$/);
    expect(state.detail!.length).toBeLessThan(300);
    // an error or a status that is no text is not said as one
    expect(await said({ status: 400, body: JSON.stringify({ status: 'error', error: { nested: true } }) })).toMatchObject({
      detail: 'Prometheus answered 400: error',
    });
    expect(await said({ status: 400, body: JSON.stringify({ status: 7 }) })).toMatchObject({
      detail: 'Prometheus answered 400: no status',
    });
  });
});

describe('a command', () => {
  const node = process.execPath;
  const check = async (command: string[]) => {
    const { monitor } = monitorOf({ exec: { command } });
    try {
      return await monitor.check();
    } finally {
      monitor.close();
    }
  };

  it('exit 0 is healthy; another code, a signal or a program that does not exist is not, each said', async () => {
    expect(await check([node, '-e', 'process.exit(0)'])).toMatchObject({ healthy: true });
    expect(await check([node, '-e', 'process.exit(3)'])).toMatchObject({ healthy: false, detail: `${node} exited 3` });
    expect(await check(['sh', '-c', 'kill -TERM $$'])).toMatchObject({ healthy: false, detail: 'sh exited SIGTERM' });
    expect(await check(['/nonexistent/kafka-in-sync', '--all'])).toMatchObject({
      healthy: false,
      detail: expect.stringMatching(/^\/nonexistent\/kafka-in-sync: spawn \/nonexistent\/kafka-in-sync ENOENT$/),
    });
  });

  it('a command that hangs is stopped at the deadline: the check fails and the process ends', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'health-exec-'));
    const pidFile = join(dir, 'pid');
    const { monitor } = monitorOf({ exec: { command: ['sh', '-c', `echo $$ > ${pidFile}; exec sleep 600`] }, intervalSeconds: 1 });
    let pid = 0;
    const alive = () => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    try {
      expect(await monitor.check()).toMatchObject({ healthy: false, detail: 'no answer within 1 s' });
      pid = await waitFor(() => Number(readFileSync(pidFile, 'utf8').trim()) || null, 'the pid the command wrote');
      await waitFor(() => !alive(), 'the command stopped');
    } finally {
      if (pid > 0 && alive()) process.kill(pid, 'SIGKILL');
      monitor.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('its arguments reach it as they are written', async () => {
    expect(await check([node, '-e', 'process.exit(process.argv[1] === "a b;c" ? 0 : 4)', 'a b;c'])).toMatchObject({ healthy: true });
  });

  it('a check stopped before it starts starts nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'health-exec-'));
    const { monitor } = monitorOf({
      exec: { command: [node, '-e', `require("fs").writeFileSync(${JSON.stringify(join(dir, 'ran'))}, "")`] },
    });
    try {
      expect(await monitor.check(AbortSignal.abort())).toEqual({
        healthy: false,
        since: expect.any(String),
        detail: `${node}: not started, the check was stopped`,
      });
    } finally {
      monitor.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('a Kubernetes check', () => {
  it("wants this VM's Node Ready (the API stand-in, through the real client)", async () => {
    // no API server runs here: the stand-in is written from the API reference and speaks its paths and codes
    const kube = await new KubeStandIn().start();
    const dir = mkdtempSync(join(tmpdir(), 'health-monitor-kube-'));
    try {
      const kubeconfig = join(dir, 'kubeconfig');
      writeFileSync(kubeconfig, kube.kubeconfig());
      const node = kube.addNode('aks-pool-1');
      node.status = { conditions: [{ type: 'Ready', status: 'True' }] };
      const { monitor } = monitorOf({ kubernetes: { kubeconfig, nodeName: 'aks-pool-1', pods: 'none' } });
      try {
        expect(await monitor.check()).toMatchObject({ healthy: true });
        node.status = { conditions: [{ type: 'Ready', status: 'False', reason: 'KubeletNotReady' }] };
        expect(await monitor.check()).toMatchObject({ healthy: false, detail: 'Node aks-pool-1 is not Ready (KubeletNotReady)' });
      } finally {
        monitor.close();
      }
    } finally {
      await kube.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
