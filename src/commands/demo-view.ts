/**
 * The fleet view of `se-bridge demo --fleet`: the relay reads every member's record from the
 * fleet's store, and its read API (`GET /v1/fleet`, `GET /v1/fleet/events`, behind a read key)
 * is printed as a summary: the groups, their members, slots, health and calendars, and every
 * pending event. Beside it, Azure's feed: an Event Grid delivery (its notification as the system
 * topic sends it) reports a Freeze of batch-7, a VM no bridge watches; the relay says it once to
 * its sink as `azure.scheduledevent.unwatched`, and lists it with why.
 */
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { z } from 'zod';
import { eventGridEvent, SUBSCRIPTION } from '../simulator/azure-events.ts';
import { table } from './common.ts';
import { ask, say, until, type DemoContext, type Member } from './demo-kit.ts';

/** The read key of the relay's read API and the key Event Grid's subscription sends. */
export interface ViewKeys {
  readonly read: string;
  readonly eventGrid: string;
  /** A console key that may approve, for the person trying the demo. */
  readonly console: string;
}

/** relayView: a relay's fleet view over the members' store, Azure's feed from Event Grid, and one sink for what the relay says. */
export const relayView = (store: Record<string, unknown>, keys: ViewKeys): Record<string, unknown> => ({
  fleet: { store, cacheMs: 0 },
  readKeys: [keys.read],
  console: { listen: '127.0.0.1:0', keys: [{ name: 'You', key: keys.console, role: 'approve' }] },
  azure: { subscriptions: [SUBSCRIPTION], eventGrid: { key: keys.eventGrid } },
  sinks: [{ name: 'oncall', type: 'stdout' }],
});

/** RelayLines keeps what the relays' stdout sink writes, line by line, for the demo to print. */
export class RelayLines extends Writable {
  readonly lines: string[] = [];
  #partial = '';

  override _write(chunk: Buffer | string, _encoding: BufferEncoding, done: (err?: Error | null) => void): void {
    const parts = (this.#partial + chunk.toString()).split('\n');
    this.#partial = parts.pop() ?? '';
    this.lines.push(...parts);
    done();
  }
}

const Fleet = z.object({
  groups: z.array(
    z.object({
      group: z.string(),
      maxUnavailable: z.number().nullable(),
      members: z.number(),
      stale: z.number(),
      pending: z.number(),
      slots: z.array(z.object({ slot: z.string(), vm: z.string().nullable(), mode: z.string().nullable() })),
    }),
  ),
  members: z.array(
    z.object({
      group: z.string(),
      vm: z.string(),
      holdsSlot: z.boolean(),
      events: z.number(),
      health: z.object({ healthy: z.boolean(), since: z.string() }).optional(),
      calendar: z.object({ open: z.boolean(), blackout: z.string().nullable() }).optional(),
    }),
  ),
  pending: z.number(),
  unwatched: z.number(),
});

const Events = z.object({
  total: z.number(),
  events: z.array(
    z.object({
      group: z.string().nullable(),
      vm: z.string(),
      eventId: z.string(),
      eventType: z.string(),
      status: z.string(),
      approval: z.object({ by: z.string(), via: z.string() }).optional(),
      held: z.object({ by: z.array(z.string()) }).optional(),
      unwatched: z.object({ why: z.string() }).optional(),
    }),
  ),
});
type FleetEvents = z.infer<typeof Events>['events'];

/**
 * agrees: whether the pending events the view lists for each member are those its IMDS lists,
 * with the same status, and approved where its bridge approved them (a member writes its record
 * at once when that changes, at most once a second).
 */
function agrees(events: FleetEvents, members: readonly Member[]): boolean {
  return members.every((m) => {
    const listed = m.sim.document().Events.map((e) => ({ eventId: String(e.EventId), status: String(e.EventStatus) }));
    const shown = events.filter((e) => e.vm === m.name);
    return (
      shown.length === listed.length &&
      listed.every((l) => {
        const e = shown.find((s) => s.eventId === l.eventId);
        return e !== undefined && e.status === l.status && (e.approval !== undefined) === (m.bridge.store.approvals.of(l.eventId) !== null);
      })
    );
  });
}

/** groupsTable: each group of GET /v1/fleet: its budget, members, pending events and the slots held. */
const groupsTable = (fleet: z.infer<typeof Fleet>): string =>
  table(
    ['GROUP', 'BUDGET', 'MEMBERS', 'STALE', 'PENDING', 'SLOTS'],
    fleet.groups.map((g) => {
      const slots = g.slots.flatMap((s) => (s.vm === null ? [] : [`${s.slot}: ${s.vm} (${s.mode ?? '?'})`]));
      const budget = g.maxUnavailable === null ? '-' : String(g.maxUnavailable);
      return [g.group, budget, String(g.members), String(g.stale), String(g.pending), slots.join(', ') || '-'];
    }),
  );

/** membersTable: each member of GET /v1/fleet: its slot, its health and what its calendar says now. */
const membersTable = (fleet: z.infer<typeof Fleet>): string =>
  table(
    ['VM', 'GROUP', 'SLOT', 'HEALTH', 'EARLY APPROVAL', 'EVENTS'],
    fleet.members.map((m) => {
      const health = m.health === undefined ? '-' : m.health.healthy ? 'healthy' : `not healthy since ${m.health.since}`;
      const calendar =
        m.calendar === undefined ? '-' : m.calendar.open ? 'open' : `closed: inside the blackout ${m.calendar.blackout ?? '?'}`;
      return [m.vm, m.group, m.holdsSlot ? 'yes' : '-', health, calendar, String(m.events)];
    }),
  );

/** viewDemo prints the fleet view and Azure's feed beside it; true when the relay said the unwatched event once and lists it. */
export async function viewDemo(
  ctx: DemoContext,
  o: { relay: string; console: string | null; keys: ViewKeys; relayOut: RelayLines; members: readonly Member[] },
): Promise<boolean> {
  const read = { authorization: `Bearer ${o.keys.read}` };
  const get = async <T>(path: string, schema: z.ZodType<T>): Promise<T> => {
    const res = await ask(ctx.http, `${o.relay}${path}`, { headers: read });
    if (res.status !== 200) throw new Error(`GET ${path} answered ${res.status}: ${res.text}`);
    return schema.parse(JSON.parse(res.text));
  };
  // what each member did has reached its record (and the store) before the view is printed
  await until(async () => agrees((await get('/v1/fleet/events', Events)).events, o.members), "the members' records", 20_000);
  const fleet = await get('/v1/fleet', Fleet);
  say('\nThe fleet view: GET /v1/fleet on the relay (Authorization: Bearer <read key>), every group read from the store in one listing:');
  say(`${groupsTable(fleet)}\n\n${membersTable(fleet)}`);
  say(`${fleet.members.length} members in ${fleet.groups.length} groups; ${fleet.pending} pending events, ${fleet.unwatched} unwatched`);

  // Azure's feed: the system topic's notification of a Freeze of a VM that has no bridge
  const vm = 'batch-7';
  const resourceId = `/subscriptions/${SUBSCRIPTION}/resourceGroups/demo-rg/providers/Microsoft.Compute/virtualMachines/${vm}`;
  const notification = eventGridEvent({
    ...{ resourceId, eventId: randomUUID().toUpperCase(), eventType: 'Freeze', durationInSeconds: 5 },
    ...{ notBefore: new Date(Date.now() + 10 * 60_000).toUTCString(), description: 'Host server is undergoing maintenance.' },
  });
  const delivered = await ask(ctx.http, `${o.relay}/v1/azure/eventgrid?code=${encodeURIComponent(o.keys.eventGrid)}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'aeg-event-type': 'Notification' },
    body: JSON.stringify([notification]),
  });
  say(
    `\nEvent Grid delivers Azure's record of a Freeze of ${vm}, a VM no bridge watches (POST /v1/azure/eventgrid): ${delivered.status} ${delivered.text}`,
  );
  const said = await until(
    () => {
      const lines = o.relayOut.lines.filter((l) => l.includes(vm));
      return lines.length > 0 && lines;
    },
    'the unwatched event at the relay',
    20_000,
  );
  for (const line of said) say(`  the relay's sink: ${line}`);

  const events = await get('/v1/fleet/events', Events);
  say(`GET /v1/fleet/events: ${events.total} pending events`);
  say(
    table(
      ['VM', 'GROUP', 'EVENT', 'TYPE', 'STATUS', 'APPROVED', 'WHY'],
      events.events.map((e) => [
        e.vm,
        e.group ?? '-',
        e.eventId.slice(0, 8),
        e.eventType,
        e.status,
        e.approval === undefined ? '-' : `${e.approval.by} (${e.approval.via})`,
        e.unwatched !== undefined ? `unwatched: ${e.unwatched.why}` : e.held !== undefined ? `held by ${e.held.by.join(', ')}` : '-',
      ]),
    ),
  );
  const listed = events.events.find((e) => e.vm === vm);
  const ok =
    delivered.status === 200 && o.relayOut.lines.filter((l) => l.includes(vm)).length === 1 && listed?.unwatched?.why === 'no-member';
  // the console: the same fleet in a browser; its sign-in takes the demo's key
  const signIn =
    o.console === null
      ? null
      : await ask(ctx.http, `${o.console}/console/sign-in`, {
          method: 'POST',
          headers: { origin: o.console, 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ key: o.keys.console }).toString(),
        });
  if (signIn !== null) say(`\nThe fleet console: ${o.console}/console (sign in with the key ${o.keys.console})`);
  const signedIn = signIn?.status === 303;
  say(
    ok && signedIn
      ? `\nThe relay reads the whole fleet from the store; Azure's feed shows what no bridge watches (${vm}), said once by the relay.`
      : '\nSomething went wrong: see above.',
  );
  return ok && signedIn;
}
