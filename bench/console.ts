/**
 * Benchmark phase C: the fleet console. A fleet of N members in 5 groups with E pending events in
 * all (100 and 1,000 by default), written as member records to Blob Storage (Azurite); the real
 * relay serves the console (Service Bus played by the AMQP peer), read in headless Chromium.
 * Measured: the first load (the bytes of the page, its stylesheet and script, and compressed as a
 * proxy would send them; the time from asking for /console to every bar placed on the axis), and
 * a live update (from a member's record written with a new event to its bar on the open page,
 * with no reload), p50 and max of five, and the relay's time to make the timeline.
 * `node bench/console.ts [N] [E]` runs it alone.
 */
import { gzipSync } from 'node:zlib';
import { pathToFileURL } from 'node:url';
import { pino } from 'pino';
import { startRelay } from '../src/relay/relay.ts';
import { openFleetStore } from '../src/fleet/budget/stores/open.ts';
import { FleetConfig } from '../src/fleet/budget/config.ts';
import { memberKey } from '../src/fleet/budget/records.ts';
import { fleetEvents } from '../src/fleet/view/events.ts';
import { timelineOf } from '../src/relay/console-timeline.ts';
import { timelineHtml } from '../src/relay/console-render.ts';
import { fleetKeys, fleetPeer, relayConfig } from '../testkit/fleet.ts';
import { FleetStores, memberVm } from '../testkit/fleet-stores.ts';
import { launchChromium } from '../testkit/browser.ts';
import { dist, log, sleep } from './common.ts';

const KEY = 'bench-console-key-0123456789';
/** What the bench reads of the page's own globals (the project's types have no DOM). */
interface Page {
  readonly document: { querySelectorAll(s: string): Iterable<{ style: { left: string } }>; querySelector(s: string): unknown };
}
const GROUPS = 5;

/** record: member `i`'s record with `events` pending events over the next day. */
function record(i: number, events: number, now: number, extra = 0) {
  const vm = `c${String(i).padStart(4, '0')}`;
  const id = memberVm(vm);
  return {
    ...{ member: memberKey(id), vm, resourceId: id.resourceId, heartbeatAt: new Date(now).toISOString(), heartbeatSeconds: 30 },
    ...{ slot: null, maxUnavailable: 2, unhealthyCountsForSeconds: 600 },
    events: Array.from({ length: events + extra }, (_, j) => ({
      ...{ eventId: `E${i}-${j}`, eventType: j % 3 === 0 ? 'Freeze' : 'Reboot', status: 'Scheduled' },
      ...{ notBefore: new Date(now + ((i * 7 + j * 131) % 1440) * 60_000).toISOString(), durationInSeconds: -1, approved: false },
    })),
  };
}

export async function phaseConsole(n = 100, e = 1000) {
  const stores = await FleetStores.start();
  const peer = await fleetPeer();
  const browser = await launchChromium();
  const container = `console-${n}`;
  const store = { ...stores.config('blob'), container };
  const groups = await Promise.all(
    Array.from({ length: GROUPS }, (_, g) => openFleetStore(FleetConfig.parse({ group: `g${g}`, store }).store, `g${g}`)),
  );
  const relay = await startRelay(
    relayConfig(peer, fleetKeys(), {
      fleet: { store, cacheMs: 0 },
      console: { listen: '127.0.0.1:0', keys: [{ name: 'Bench', key: KEY, role: 'approve' }] },
    }),
    pino({ level: 'silent' }),
    { host: '127.0.0.1', port: 0 },
  );
  try {
    const now = Date.now();
    const per = Math.floor(e / n);
    const versions: (string | null)[] = [];
    for (let i = 0; i < n; i++)
      versions.push(await groups[i % GROUPS]!.put(`member-${record(i, 0, now).member}`, record(i, per, now), null));
    // what the relay makes of it, alone
    const snapshot = await relay.reader!.read();
    const made: number[] = [];
    let html = '';
    for (let r = 0; r < 5; r++) {
      const t = performance.now();
      html = timelineHtml(timelineOf(snapshot, fleetEvents(snapshot, {}, now), now, '24h'), true);
      made.push(performance.now() - t);
    }
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await page.goto(`${relay.consoleUrl}/console`);
    await page.getByLabel('Key').fill(KEY);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Fleet console' }).waitFor();
    // the first load, signed in: from asking for the page to every bar placed
    const loads: number[] = [];
    for (let r = 0; r < 3; r++) {
      const t = performance.now();
      await page.goto(`${relay.consoleUrl}/console`);
      // every bar has its place on the axis (run in the page, under its CSP: a function, never a string)
      await page.waitForFunction(() => {
        const bars = [...(globalThis as unknown as Page).document.querySelectorAll('a.bar')];
        return bars.length > 0 && bars.every((b) => b.style.left !== '');
      });
      loads.push(performance.now() - t);
    }
    const bars = await page.locator('a.bar').count();
    const cookie = (await page.context().cookies())[0]!;
    const fetchText = async (path: string) =>
      (await fetch(`${relay.consoleUrl}${path}`, { headers: { cookie: `${cookie.name}=${cookie.value}` } })).text();
    const files = { page: await fetchText('/console'), css: await fetchText('/console/app.css'), js: await fetchText('/console/app.js') };
    const bytes = Object.fromEntries(Object.entries(files).map(([k, v]) => [k, { raw: Buffer.byteLength(v), gzip: gzipSync(v).length }]));
    // a live update: a member's record gets one more event; its bar on the open page, with no reload
    const updates: number[] = [];
    for (let r = 0; r < 5; r++) {
      const i = r * 7;
      const next = record(i, per, now, r + 1);
      const t = performance.now();
      versions[i] = await groups[i % GROUPS]!.put(`member-${next.member}`, next, versions[i]!);
      const id = `E${i}-${per + r}`;
      await page.waitForFunction(
        (eventId) => (globalThis as unknown as Page).document.querySelector(`a.bar[href*="${eventId}"]`) !== null,
        id,
        { timeout: 30_000 },
      );
      updates.push(performance.now() - t);
      await sleep(200);
    }
    return {
      members: n,
      events: bars,
      timelineHtmlKiB: Math.round(Buffer.byteLength(html) / 102.4) / 10,
      makeTimelineMs: dist(made),
      firstLoadMs: dist(loads),
      bytes,
      liveUpdateMs: dist(updates),
    };
  } finally {
    await relay.close();
    await Promise.all(groups.map((g) => g.close()));
    await browser.close();
    await peer.close();
    await stores.stop();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [n, e] = [Number(process.argv[2] ?? 100), Number(process.argv[3] ?? 1000)];
  log(`C: the fleet console, ${n} members and ${e} pending events`);
  console.log(JSON.stringify(await phaseConsole(n, e)));
}
