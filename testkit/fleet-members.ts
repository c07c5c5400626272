/**
 * Fleet budget members in the test's own process, each a real FleetBudget over a real store
 * client (fleet-stores.ts), with a clock a test may set and a document a test hands over as the
 * poll loop would.
 */
import { pino } from 'pino';
import type { z } from 'zod';
import { FleetBudget } from '../src/fleet/budget/budget.ts';
import { asBudget, FleetConfig } from '../src/fleet/budget/config.ts';
import { asSlot } from '../src/fleet/budget/records.ts';
import { HealthMonitor } from '../src/health/monitor.ts';
import { openFleetStore } from '../src/fleet/budget/stores/open.ts';
import type { FleetStore } from '../src/fleet/budget/stores/port.ts';
import type { VmIdentity } from '../src/imds/identity.ts';
import type { EventsDocument, ScheduledEvent } from '../src/imds/wire.ts';
import { memberVm, type FleetStores, type StoreKind } from './fleet-stores.ts';

const silentLogger = pino({ level: 'silent' });

export interface Member {
  readonly budget: FleetBudget;
  /** The member's store, for a test to read. */
  readonly store: FleetStore;
  readonly view: { vm: VmIdentity; document: EventsDocument | null; goodReads: number; approvalServerUrl: null };
  /** The member's log lines, parsed. */
  readonly lines: Record<string, unknown>[];
  givenBack: boolean;
  /** The member's clock (null: the real one). */
  now: number | null;
  /** read: the member reads this document (its events), as the poll loop hands it over. */
  read(events: ScheduledEvent[]): Promise<void>;
  /** Its health checks, when `more.health` configures them (on the member's clock). */
  readonly health?: HealthMonitor;
  /** How often its watch of the slots woke it (Leases: a slot given back while it waits at the head of the queue). */
  wakes: number;
}

/**
 * budgetMember: a member named `name` of `group` (one slot, 60 s of margin, 20 s heartbeats
 * unless `more` says otherwise); `wrap` may put a store of the test's own around the real one.
 */
export async function budgetMember(
  stores: Pick<FleetStores, 'config'>,
  kind: StoreKind,
  group: string,
  name: string,
  more: Partial<z.input<typeof FleetConfig>> = {},
  wrap: (store: FleetStore) => FleetStore = (s) => s,
): Promise<Member> {
  const config = asBudget(
    FleetConfig.parse({
      group,
      maxUnavailable: 1,
      store: stores.config(kind),
      marginSeconds: 60,
      heartbeatSeconds: 20,
      ...more,
    }),
  );
  const store = wrap(await openFleetStore(config.store, group));
  const lines: Record<string, unknown>[] = [];
  const view = { vm: memberVm(name), document: null as EventsDocument | null, goodReads: 1, approvalServerUrl: null };
  const m: Member = {
    store,
    view,
    lines,
    givenBack: true,
    now: null,
    wakes: 0,
    budget: undefined as unknown as FleetBudget,
    async read(events) {
      view.document = { incarnation: 1, events };
      await m.budget.onRead(view.document);
    },
  };
  const clock = () => m.now ?? Date.now();
  if (config.health !== undefined) (m as { health?: HealthMonitor }).health = new HealthMonitor(config.health, silentLogger, clock);
  (m as { budget: FleetBudget }).budget = new FleetBudget({
    config,
    store,
    ...(m.health === undefined ? {} : { health: m.health }),
    view,
    logger: pino({ level: 'debug' }, { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) }),
    givenBack: () => m.givenBack,
    now: clock,
    hooks: { onWake: () => void m.wakes++ },
  });
  return m;
}

/** live: the VMs of the group's live slot records, sorted. */
export async function live(m: Member): Promise<string[]> {
  const now = Date.now();
  return (await m.store.list('slot-'))
    .map((r) => asSlot(r.value))
    .filter((s) => s.member !== null && (s.until === undefined || Date.parse(s.until) > now))
    .map((s) => s.vm!)
    .sort();
}
