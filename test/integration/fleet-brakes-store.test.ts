/**
 * The brakes' records over the two real stores (Blob Storage in Azurite, Leases at the Kubernetes
 * API stand-in): the breaker's failure recorded once when two members see it at the same moment
 * (one conditional write wins), and the relay's pause and resume, signed like its approvals,
 * refusing what does not read without writing anything.
 */
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { Breaker, BREAKER_NAME, BreakerSchema } from '../../src/fleet/budget/breaker.ts';
import { PAUSE_NAME, PauseSchema, type Pause } from '../../src/fleet/budget/pause.ts';
import { resumeGroup } from '../../src/fleet/budget/pause-store.ts';
import { slotName } from '../../src/fleet/budget/records.ts';
import { openFleetStore } from '../../src/fleet/budget/stores/open.ts';
import type { FleetStore } from '../../src/fleet/budget/stores/port.ts';
import { RelayConfig } from '../../src/relay/config.ts';
import { startRelay, type RunningRelay } from '../../src/relay/relay.ts';
import { secretKey, signatureHeaders } from '../../src/lib/standard-webhooks.ts';
import { fleetStoresPerFile, STORE_KINDS } from '../../testkit/fleet-stores.ts';
import { API_SECRET } from '../../testkit/fleet.ts';
import { silentLogger } from '../helpers.ts';

const fleetStores = fleetStoresPerFile();
const relays: RunningRelay[] = [];
afterEach(async () => {
  await Promise.all(relays.splice(0).map((r) => r.close()));
});

const READ_KEY = 'brakes-read-key-0123456789abcdef';

/** counted: the store, with its conditional writes counted (written, and refused because another came first). */
function counted(store: FleetStore) {
  const puts = { written: 0, refused: 0 };
  const s: FleetStore = {
    where: store.where,
    get: (...a) => store.get(...a),
    remove: (...a) => store.remove(...a),
    list: (...a) => store.list(...a),
    head: (...a) => store.head(...a),
    close: () => store.close(),
    put: async (...a) => {
      const v = await store.put(...a);
      if (v === null) puts.refused++;
      else puts.written++;
      return v;
    },
  };
  return { s, puts };
}

describe.each(STORE_KINDS)('the brakes over the %s store', (kind) => {
  it('two members that see a lapsed slot at the same moment record it once; the one whose write opens the breaker pauses the group', async () => {
    const group = `race-${kind}`;
    const config = fleetStores().config(kind);
    const [a, b] = await Promise.all([0, 1].map(async () => counted(await openFleetStore(config as never, group))));
    const now = Date.now();
    // m0, approved early, never came back: its slot passed its recorded end a second ago, still in its name
    await a!.s.put(
      slotName(0),
      {
        member: 'm0-1',
        vm: 'm0',
        eventIds: ['E0'],
        since: new Date(now - 60_000).toISOString(),
        until: new Date(now - 1000).toISOString(),
        mode: 'early',
      },
      null,
    );
    const opened: Pause[] = [];
    const breaker = (s: FleetStore) =>
      new Breaker({
        config: { failures: 1, withinSeconds: 600 },
        group,
        store: s,
        logger: silentLogger,
        now: () => now,
        opened: (p) => opened.push(p),
      });
    const listing = await a!.s.list('slot-');
    const before = { ...a!.puts };
    const wrote = await Promise.all([breaker(a!.s).look(listing), breaker(b!.s).look(listing)]);
    // one of them recorded it (and paused the group); the other's write was refused, and it wrote nothing more
    expect(wrote.filter(Boolean)).toHaveLength(1);
    expect(opened).toHaveLength(1);
    expect(a!.puts.written - before.written + b!.puts.written).toBe(2); // the failure, then the pause
    expect(a!.puts.refused - before.refused + b!.puts.refused).toBe(1);
    const failures = BreakerSchema.parse((await a!.s.get(BREAKER_NAME))?.value).failures;
    expect(failures).toEqual([expect.objectContaining({ vm: 'm0', eventIds: ['E0'] })]);
    expect(PauseSchema.parse((await a!.s.get(PAUSE_NAME))?.value)).toMatchObject({ by: 'breaker', members: ['m0'] });
    // a listing with nothing new costs no write
    const again = await a!.s.list('slot-');
    const after = a!.puts.written + a!.puts.refused;
    expect(await breaker(a!.s).look(again)).toBe(false);
    expect(a!.puts.written + a!.puts.refused).toBe(after);
    await Promise.all([a!.s.close(), b!.s.close()]);
  });

  it('a breaker that opened while its pause could not be written pauses the group at the next listing; a resume is not undone', async () => {
    const group = `reopen-${kind}`;
    const real = await openFleetStore(fleetStores().config(kind) as never, group);
    // the store times out once at the pause's write; `between` runs after the first write of a resume, before its second
    let failPause = true;
    let between: (() => Promise<void>) | null = null;
    const after = async <T>(v: T): Promise<T> => {
      const f = between;
      between = null;
      if (f !== null) await f();
      return v;
    };
    const s: FleetStore = {
      where: real.where,
      get: (...a) => real.get(...a),
      list: (...a) => real.list(...a),
      head: (...a) => real.head(...a),
      close: () => real.close(),
      remove: async (...a) => after(await real.remove(...a)),
      put: async (name, ...a) => {
        if (name === PAUSE_NAME && failPause) {
          failPause = false;
          throw new Error('the store did not answer in time');
        }
        return after(await real.put(name, ...a));
      },
    };
    try {
      const now = Date.now();
      const lapsed = { member: 'm0-1', vm: 'm0', eventIds: ['E0'], since: new Date(now - 60_000).toISOString(), mode: 'early' };
      await s.put(slotName(0), { ...lapsed, until: new Date(now - 1000).toISOString() }, null);
      const opened: Pause[] = [];
      const config = { failures: 1, withinSeconds: 600 };
      const breaker = new Breaker({ config, group, store: s, logger: silentLogger, now: () => now, opened: (p) => opened.push(p) });
      await expect(breaker.look(await s.list('slot-'))).rejects.toThrow(/did not answer/);
      expect(BreakerSchema.parse((await s.get(BREAKER_NAME))?.value).failures).toHaveLength(1);
      expect(await s.get(PAUSE_NAME)).toBeNull();
      // the next listing: the failures recorded open it, though nothing new lapsed
      await breaker.look(await s.list('slot-'));
      expect(PauseSchema.parse((await s.get(PAUSE_NAME))?.value)).toMatchObject({ by: 'breaker', members: ['m0'] });
      expect(opened).toHaveLength(1);
      // a member lists the slots between the two writes of a person's resume: it writes nothing, and the resume holds
      const seen: boolean[] = [];
      between = async () => void seen.push(await breaker.look(await s.list('slot-')));
      await resumeGroup(s, now + 1);
      expect(seen).toEqual([false]);
      expect(await s.get(PAUSE_NAME)).toBeNull();
      expect(await breaker.look(await s.list('slot-'))).toBe(false);
      expect(await s.get(PAUSE_NAME)).toBeNull();
    } finally {
      await real.close();
    }
  });

  it('a member back but not whole (its health timed out) records its own failure, as its lapse would be', async () => {
    const group = `not-whole-${kind}`;
    const store = await openFleetStore(fleetStores().config(kind) as never, group);
    try {
      const now = Date.now();
      const slot = {
        member: 'm3-1',
        vm: 'm3',
        eventIds: ['E3'],
        since: new Date(now - 60_000).toISOString(),
        until: new Date(now + 600_000).toISOString(),
        mode: 'early',
      };
      const version = (await store.put(slotName(0), slot, null))!;
      const opened: Pause[] = [];
      const breaker = new Breaker({
        config: { failures: 1, withinSeconds: 600 },
        group,
        store,
        logger: silentLogger,
        now: () => now,
        opened: (p) => opened.push(p),
      });
      await breaker.notWhole({ name: slotName(0), value: slot, version });
      expect(BreakerSchema.parse((await store.get(BREAKER_NAME))?.value).failures).toEqual([
        expect.objectContaining({ vm: 'm3', eventIds: ['E3'], since: slot.since }),
      ]);
      expect(opened).toEqual([expect.objectContaining({ by: 'breaker', members: ['m3'] })]);
      // said once: told again, it writes nothing more
      const before = (await store.get(BREAKER_NAME))!.version;
      await breaker.notWhole({ name: slotName(0), value: slot, version });
      expect((await store.get(BREAKER_NAME))!.version).toBe(before);
      // a slot Azure's own start took is no failure of an early approval
      await breaker.notWhole({ name: slotName(1), value: { ...slot, member: 'm4-1', vm: 'm4', mode: 'started' }, version });
      expect(BreakerSchema.parse((await store.get(BREAKER_NAME))?.value).failures).toHaveLength(1);
    } finally {
      await store.close();
    }
  });

  it('the relay pauses and resumes a group on a signed request, and refuses one that does not read, writing nothing', async () => {
    const group = `relay-${kind}`;
    const config = RelayConfig.parse({
      ...{ listen: '127.0.0.1:0', observability: { listen: 'off' }, log: { level: 'silent' } },
      ...{ fleet: { store: fleetStores().config(kind), cacheMs: 0 }, readKeys: [READ_KEY], apiSecrets: [API_SECRET] },
    });
    const r = await startRelay(config, pino({ level: 'silent' }), { host: '127.0.0.1', port: 0 });
    relays.push(r);
    const post = async (path: string, body: unknown, signed = true) => {
      const text = JSON.stringify(body);
      const headers = {
        'content-type': 'application/json',
        ...(signed ? signatureHeaders([secretKey(API_SECRET)!], `msg_${Math.random().toString(36).slice(2)}`, text) : {}),
      };
      const res = await fetch(`${r.url}${path}`, { method: 'POST', headers, body: text, signal: AbortSignal.timeout(10_000) });
      return { status: res.status, json: (await res.json()) as Record<string, any> };
    };
    const store = await openFleetStore(fleetStores().config(kind) as never, group);
    try {
      const soon = new Date(Date.now() + 3600_000).toISOString();
      for (const [body, status] of [
        [{ group, by: 'alice', reason: 'release', extra: 1 }, 400],
        [{ group, by: 'alice' }, 400],
        [{ group, by: 'alice', reason: 'release', until: 'tomorrow' }, 400],
        [{ group, by: 'alice', reason: 'release', until: new Date(Date.now() - 1000).toISOString() }, 400],
        // an end without its offset (read in the relay's local time), or past what a record can say
        [{ group, by: 'alice', reason: 'release', until: '2099-12-01T06:00:00' }, 400],
        [{ group, by: 'alice', reason: 'release', until: '+010000-01-01T00:00:00Z' }, 400],
        [{ group: 'Not A Group', by: 'alice', reason: 'release' }, 400],
        [{ group: 'se-bridge-azure', by: 'alice', reason: 'release' }, 400],
        [{ group, reason: 'release' }, 400],
      ] as const) {
        const res = await post('/v1/fleet/pause', body);
        expect({ body, status: res.status, code: res.json.error?.code }).toEqual({ body, status, code: 'MALFORMED' });
      }
      expect(await post('/v1/fleet/pause', { group, by: 'alice', reason: 'release' }, false)).toMatchObject({ status: 401 });
      expect(await store.get(PAUSE_NAME)).toBeNull();

      const paused = await post('/v1/fleet/pause', { group, by: 'alice', reason: 'release 4.2', until: soon });
      expect(paused).toMatchObject({
        status: 200,
        json: { group, paused: { by: 'person', who: 'alice', why: 'release 4.2', until: soon } },
      });
      expect(PauseSchema.parse((await store.get(PAUSE_NAME))?.value)).toMatchObject({ who: 'alice', until: soon });
      // the read API says it
      const fleet = await fetch(`${r.url}/v1/fleet`, {
        headers: { authorization: `Bearer ${READ_KEY}` },
        signal: AbortSignal.timeout(10_000),
      });
      expect(((await fleet.json()) as Record<string, any>).groups).toContainEqual(
        expect.objectContaining({ group, pause: expect.objectContaining({ who: 'alice' }) }),
      );

      expect(await post('/v1/fleet/resume', { group, by: 'bob', reason: 'no' })).toMatchObject({ status: 400 });
      expect(await post('/v1/fleet/resume', { group, by: 'bob' })).toMatchObject({
        status: 200,
        json: { group, resumed: { who: 'alice' }, by: 'bob' },
      });
      expect(await store.get(PAUSE_NAME)).toBeNull();
      expect(await post('/v1/fleet/resume', { group, by: 'bob' })).toMatchObject({ status: 200, json: { resumed: null } });

      // a signed request sent again (its webhook-id, within the signature's tolerance) is answered as the first time and changes nothing
      const text = JSON.stringify({ group, by: 'bob' });
      const once = { 'content-type': 'application/json', ...signatureHeaders([secretKey(API_SECRET)!], 'msg_resume_once', text) };
      const send = () =>
        fetch(`${r.url}/v1/fleet/resume`, { method: 'POST', headers: once, body: text, signal: AbortSignal.timeout(10_000) });
      expect((await send()).status).toBe(200);
      expect(await post('/v1/fleet/pause', { group, by: 'alice', reason: 'release 4.3' })).toMatchObject({ status: 200 });
      const again = await send();
      expect({ status: again.status, replayed: again.headers.get('idempotent-replayed') }).toEqual({ status: 200, replayed: 'true' });
      expect(((await again.json()) as Record<string, any>).resumed).toBeNull();
      expect(PauseSchema.parse((await store.get(PAUSE_NAME))?.value)).toMatchObject({ who: 'alice', why: 'release 4.3' });
    } finally {
      await store.close();
    }
  });
});
