import { createServer, type Server } from 'node:http';
import { ImdsConfig } from '../../src/config/schema.ts';
import type { AddressInfo } from 'node:net';
import { EnvHttpProxyAgent, getGlobalDispatcher, setGlobalDispatcher } from 'undici';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ImdsClient } from '../../src/imds/client.ts';
import { RateBudget } from '../../src/imds/rate-budget.ts';
import { waitFor } from '../helpers.ts';
import { ImdsError, type ImdsErrorCode } from '../../src/imds/errors.ts';
import { ImdsSimulator, type FaultSpec } from '../../src/simulator/server.ts';

let sim: ImdsSimulator;
let client: ImdsClient;

beforeEach(async () => {
  sim = new ImdsSimulator({ vmName: 'vm0' });
  const url = await sim.listen(0);
  // a short deadline that a loaded machine still meets; the faults below are slower than it
  client = new ImdsClient({ endpoint: url, requestTimeoutMs: 1000, firstRequestTimeoutMs: 4000 });
});
afterEach(async () => {
  await client.close();
  await sim.close();
});

async function errorOf(p: Promise<unknown>): Promise<ImdsError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(ImdsError);
    return err as ImdsError;
  }
  throw new Error('expected an ImdsError');
}

describe('ImdsClient', () => {
  it('reads the document with the Metadata header and api-version', async () => {
    sim.addEvent({ EventId: 'A', EventType: 'Freeze', DurationInSeconds: 5 });
    const read = await client.getScheduledEvents();
    expect(read.kind).toBe('document');
    if (read.kind !== 'document') return;
    expect(read.document.incarnation).toBe(2);
    expect(read.document.events[0]).toMatchObject({ eventId: 'A', eventType: 'Freeze', durationInSeconds: 5 });
    expect(read.etag).toMatch(/^".+"$/);
    expect(sim.requests.at(-1)).toMatchObject({ method: 'GET', path: '/metadata/scheduledevents', status: 200 });
  });

  it('sends the ETag back and reads 304 as unchanged', async () => {
    const first = await client.getScheduledEvents();
    if (first.kind !== 'document') throw new Error('expected a document');
    expect((await client.getScheduledEvents({ etag: first.etag })).kind).toBe('not-modified');
    sim.addEvent({});
    const next = await client.getScheduledEvents({ etag: first.etag });
    expect(next.kind).toBe('document');
  });

  it('works with a server that offers no ETag', async () => {
    sim.etagEnabled = false;
    const first = await client.getScheduledEvents();
    expect(first.kind === 'document' && first.etag).toBe(null);
    expect((await client.getScheduledEvents({ etag: null })).kind).toBe('document');
  });

  it.each<[string, FaultSpec, ImdsErrorCode, boolean]>([
    ['400', { kind: 'status', status: 400 }, 'IMDS_BAD_REQUEST', false],
    ['404', { kind: 'status', status: 404 }, 'IMDS_NOT_FOUND', false],
    ['405', { kind: 'status', status: 405 }, 'IMDS_METHOD_NOT_ALLOWED', false],
    ['410', { kind: 'status', status: 410 }, 'IMDS_GONE', true],
    ['429', { kind: 'status', status: 429 }, 'IMDS_RATE_LIMITED', true],
    ['500', { kind: 'status', status: 500 }, 'IMDS_SERVER_ERROR', true],
    ['503', { kind: 'status', status: 503 }, 'IMDS_SERVER_ERROR', true],
    ['302', { kind: 'status', status: 302 }, 'IMDS_HTTP_STATUS', false],
    ['garbage', { kind: 'garbage' }, 'IMDS_UNPARSABLE', true],
    ['truncated', { kind: 'truncated' }, 'IMDS_UNPARSABLE', true],
    ['schema-invalid', { kind: 'schema' }, 'IMDS_SCHEMA_INVALID', false],
    ['connection reset', { kind: 'reset' }, 'IMDS_NETWORK', true],
    ['slow', { kind: 'slow', delayMs: 3000 }, 'IMDS_TIMEOUT', true],
    ['hang', { kind: 'hang' }, 'IMDS_TIMEOUT', true],
  ])('turns an injected %s into %s', async (_name, fault, code, retryable) => {
    await client.getScheduledEvents(); // the first answer switches to the short timeout
    sim.injectFault(fault);
    const err = await errorOf(client.getScheduledEvents());
    expect(err.code).toBe(code);
    expect(err.retryable).toBe(retryable);
    // and the next read is fine again
    expect((await client.getScheduledEvents()).kind).toBe('document');
  });

  it('reads Retry-After of a 429', async () => {
    sim.injectFault({ kind: 'status', status: 429, retryAfterSec: 2 });
    const err = await errorOf(client.getScheduledEvents());
    expect(err.retryAfterMs).toBe(2000);
  });

  it('gives the first request the long timeout, later ones the short one', async () => {
    sim.injectFault({ kind: 'slow', delayMs: 2000 });
    expect((await client.getScheduledEvents()).kind).toBe('document');
    sim.injectFault({ kind: 'slow', delayMs: 2000 });
    expect((await errorOf(client.getScheduledEvents())).code).toBe('IMDS_TIMEOUT');
  });

  it('reports a refused connection as a network error', async () => {
    const dead = new ImdsClient({ endpoint: 'http://127.0.0.1:1', requestTimeoutMs: 500, firstRequestTimeoutMs: 500 });
    const err = await errorOf(dead.getScheduledEvents());
    expect(err.code).toBe('IMDS_NETWORK');
    expect(err.message).toMatch(/ECONNREFUSED/);
    await dead.close();
  });

  it('reports an aborted request as aborted', async () => {
    sim.injectFault({ kind: 'hang' });
    const ac = new AbortController();
    const p = client.getScheduledEvents({ signal: ac.signal });
    setTimeout(() => ac.abort(), 50);
    expect((await errorOf(p)).code).toBe('IMDS_ABORTED');
  });

  it('approves events with StartRequests', async () => {
    const e = sim.addEvent({ noticeMs: 600_000 });
    await client.startEvents([e.eventId]);
    expect(sim.events[0]!.status).toBe('Started');
    expect(sim.startRequests[0]!.eventIds).toEqual([e.eventId]);
    expect((await errorOf(client.startEvents(['UNKNOWN']))).code).toBe('IMDS_BAD_REQUEST');
  });

  it('reads the instance compute document', async () => {
    expect(await client.getInstanceCompute()).toMatchObject({ name: 'vm0', location: 'westeurope' });
  });

  it('keeps every IMDS call within 5 requests per second', async () => {
    // the budget's clock and sleep in virtual time: the test moves the clock a second at a time and
    // wakes the callers waiting; IMDS sees five more requests each second, never more
    let now = 0;
    const sleeping: (() => void)[] = [];
    const budget = new RateBudget(
      5,
      () => now,
      () => new Promise<void>((wake) => sleeping.push(wake)),
    );
    const limited = new ImdsClient({ endpoint: sim.url, budget, requestTimeoutMs: 5000, firstRequestTimeoutMs: 5000 });
    try {
      const calls = Promise.all(
        Array.from({ length: 16 }, (_, i) => (i % 4 === 0 ? limited.getInstanceCompute() : limited.getScheduledEvents())),
      );
      for (const [second, seen] of [
        [0, 5],
        [1000, 10],
        [2000, 15],
        [3000, 16],
      ] as const) {
        now = second;
        for (const wake of sleeping.splice(0)) wake();
        await waitFor(() => sim.requests.length === seen && sleeping.length === 16 - seen, `${seen} requests in ${second / 1000 + 1} s`);
        expect(sim.requests).toHaveLength(seen);
      }
      await calls;
    } finally {
      await limited.close();
    }
  });
});

describe('ImdsClient and proxies', () => {
  let trap: Server;
  let trapHits = 0;
  const saved = { ...process.env };
  const savedDispatcher = getGlobalDispatcher();

  beforeEach(async () => {
    trapHits = 0;
    trap = createServer((req, res) => {
      trapHits++;
      res.writeHead(502).end();
    });
    trap.on('connection', () => trapHits++);
    trap.on('connect', (_req, socket) => {
      trapHits++;
      socket.end('HTTP/1.1 502 Bad Gateway\r\n\r\n');
    });
    await new Promise<void>((r) => trap.listen(0, '127.0.0.1', () => r()));
    const proxy = `http://127.0.0.1:${(trap.address() as AddressInfo).port}`;
    Object.assign(process.env, {
      HTTP_PROXY: proxy,
      HTTPS_PROXY: proxy,
      http_proxy: proxy,
      https_proxy: proxy,
      NO_PROXY: '',
      no_proxy: '',
    });
    setGlobalDispatcher(new EnvHttpProxyAgent());
  });
  afterEach(async () => {
    process.env = saved;
    setGlobalDispatcher(savedDispatcher);
    await new Promise<void>((r) => trap.close(() => r()));
  });

  it('never goes through a proxy, even when the environment and the global dispatcher name one', async () => {
    // The trap is a working proxy target: global fetch does go through it...
    await fetch(`${sim.url}/metadata/scheduledevents?api-version=2020-07-01`, {
      headers: { metadata: 'true' },
      signal: AbortSignal.timeout(3000),
    }).catch(() => undefined);
    expect(trapHits).toBeGreaterThan(0);
    trapHits = 0;
    // ...the IMDS client does not.
    const proxied = new ImdsClient(ImdsConfig.parse({ endpoint: sim.url }));
    expect((await proxied.getScheduledEvents()).kind).toBe('document');
    await proxied.startEvents([sim.addEvent({}).eventId]);
    await proxied.getInstanceCompute();
    await proxied.close();
    expect(trapHits).toBe(0);
    expect(sim.requests).toHaveLength(3);
  });
});
