/**
 * Attacks on the console's listener, over real HTTP on 127.0.0.1: a member record's text that
 * splits the live stream's frames, and a reader that never reads the stream.
 */
import { connect } from 'node:net';
import { ServerResponse } from 'node:http';
import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { waitFor } from '../helpers.ts';
import { ConsoleServer } from '../../src/relay/console-server.ts';
import { vmId } from '../../testkit/azure-feed.ts';
import { consoleRelayConfig, snapshotOf, type SnapshotMember } from '../../testkit/console.ts';

const KEY = 'console-read-key-0123456789';
const config = consoleRelayConfig({ keys: [{ name: 'Reader', key: KEY, role: 'read' }], listen: '127.0.0.1:0' });
const iso = (ms: number) => new Date(ms).toISOString();

type Member = SnapshotMember;
const member = (vm: string, over: Partial<Member> = {}, eventType = 'Reboot'): Member => ({
  vm,
  resourceId: vmId(vm.replace(/[^a-z0-9-]/g, '')),
  events: [{ eventId: `E-${vm.length}`, eventType, status: 'Scheduled', notBefore: iso(Date.now() + 600_000), durationInSeconds: -1 }],
  holdsSlot: false,
  heartbeatAt: iso(Date.now() - 1000),
  heartbeatSeconds: 30,
  stale: false,
  ...over,
});

const servers: ConsoleServer[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function start(members: Member[], stuckMs?: number): Promise<string> {
  const server = new ConsoleServer({
    ...(stuckMs === undefined ? {} : { stuckMs }),
    config,
    console: config.console!,
    reader: { read: async () => snapshotOf({ web: members }) } as never,
    bus: null,
    arm: null,
    logger: pino({ level: 'silent' }),
  });
  servers.push(server);
  return server.listen('127.0.0.1', 0);
}

async function cookieOf(url: string): Promise<string> {
  const r = await fetch(`${url}/console/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: { origin: url, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ key: KEY }),
  });
  expect(r.status).toBe(303);
  return r.headers.get('set-cookie')!.split(';')[0]!;
}

/** frames: the events an EventSource would dispatch from `text`, parsed as the HTML standard says (CR, LF or CRLF end a line). */
function frames(text: string): { event: string; data: string }[] {
  const out: { event: string; data: string }[] = [];
  let [event, data] = ['', [] as string[]];
  for (const line of text.split(/\r\n|\r|\n/)) {
    if (line === '') {
      if (data.length > 0) out.push({ event: event || 'message', data: data.join('\n') });
      [event, data] = ['', []];
      continue;
    }
    const at = line.indexOf(':');
    const [field, value] = at < 0 ? [line, ''] : [line.slice(0, at), line.slice(at + 1).replace(/^ /, '')];
    if (field === 'event') event = value;
    if (field === 'data') data.push(value);
  }
  return out;
}

describe("the console's live stream", () => {
  it("a carriage return in a member's text cannot split a frame, rename it or cut the timeline it carries", async () => {
    // a compromised member: its event type ends the line for an EventSource and starts an event: field
    const url = await start([member('web-1'), member('web-2', {}, 'Reboot\revent: decoy\r')]);
    const cookie = await cookieOf(url);
    const ac = new AbortController();
    const r = await fetch(`${url}/console/live?range=24h`, { headers: { cookie }, signal: ac.signal });
    const reader = r.body!.getReader();
    let text = '';
    while (!/\n\n[^]*\n\n/.test(text)) text += new TextDecoder().decode((await reader.read()).value);
    ac.abort();
    const got = frames(text);
    // the page listens for "timeline" frames only: each one must be one, whole, with both members in it
    expect(got.map((f) => f.event)).toEqual(['timeline']);
    expect(got[0]!.data).toContain('web-1');
    expect(got[0]!.data).toContain('web-2');
    expect(got[0]!.data).toMatch(/<\/tbody><\/table><\/section>$/);
  });

  it('a client that never reads the stream does not make the relay queue the timeline without bound, and is let go', async () => {
    // a big timeline (a member's health.detail is unbounded text; a record may be 256 KiB) that changes every step of the 1h range (1.8 s)
    const detail = 'x'.repeat(200_000);
    const url = await start(
      Array.from({ length: 5 }, (_, i) => member(`web-${i}`, { health: { healthy: false, since: iso(Date.now()), detail } })),
      5000,
    );
    const cookie = await cookieOf(url);
    let most = 0;
    const write = ServerResponse.prototype.write;
    vi.spyOn(ServerResponse.prototype, 'write').mockImplementation(function (this: ServerResponse, ...args: unknown[]) {
      const ok = (write as (...a: unknown[]) => boolean).apply(this, args);
      most = Math.max(most, this.writableLength);
      return ok;
    });
    const { port } = new URL(url);
    const socket = connect(Number(port), '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(`GET /console/live?range=1h HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nCookie: ${cookie}\r\n\r\n`);
    // it reads nothing at all: the kernel's buffers fill, then the relay's own
    socket.pause();
    let letGo = false;
    const destroy = ServerResponse.prototype.destroy;
    vi.spyOn(ServerResponse.prototype, 'destroy').mockImplementation(function (this: ServerResponse, ...args: unknown[]) {
      letGo = true;
      return (destroy as (...a: unknown[]) => ServerResponse).apply(this, args);
    });
    // the relay lets go of it after stuckMs (5 s here) with nothing read; till then it queued what it made
    await waitFor(() => letGo, 'the relay to let go of the stream nobody reads', 40_000);
    socket.destroy();
    // about 1 MB a frame: the relay may hold a frame or two, not every one it made
    expect(most).toBeLessThan(3_000_000);
  }, 60_000);
});
