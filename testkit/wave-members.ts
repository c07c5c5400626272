/**
 * Members of a fleet group with a collision forecast, in the test's own process: each a real
 * FleetBudget and a real Forecast (collisions.ts) wired as the daemon wires them (attach.ts), over
 * a real store client (fleet-stores.ts), with a journal of its own and a clock the test sets.
 */
import { pino } from 'pino';
import { FleetBudget } from '../src/fleet/budget/budget.ts';
import { Forecast } from '../src/fleet/budget/collisions.ts';
import { portOf } from '../src/fleet/budget/forecast-turn.ts';
import { asBudget, FleetConfig } from '../src/fleet/budget/config.ts';
import { openFleetStore } from '../src/fleet/budget/stores/open.ts';
import type { FleetStore } from '../src/fleet/budget/stores/port.ts';
import type { EventsDocument, ScheduledEvent } from '../src/imds/wire.ts';
import type { BridgeEvent } from '../src/pipeline/cloudevent.ts';
import { Store } from '../src/store/store.ts';
import { memberVm, type FleetStores, type StoreKind } from './fleet-stores.ts';

const silent = pino({ level: 'silent' });

export interface WaveMember {
  readonly name: string;
  readonly budget: FleetBudget;
  readonly store: FleetStore;
  /** The fleet.collision CloudEvents it committed, in order. */
  readonly said: BridgeEvent[];
  /** read: the member reads this document (its events), as the poll loop hands it over. */
  read(events: ScheduledEvent[]): Promise<void>;
  /** The states of the words it said (foreseen, updated, resolved), in order. */
  states(): string[];
}

/** waveMember: a member `name` of `group` with `maxUnavailable` k (a number), on `clock`; `wrap` may put a store of the test's own around the real one. */
export async function waveMember(
  stores: Pick<FleetStores, 'config'>,
  kind: StoreKind,
  group: string,
  name: string,
  o: {
    readonly k: number;
    readonly clock: () => number;
    readonly heartbeatSeconds?: number;
    readonly wrap?: (s: FleetStore) => FleetStore;
  },
): Promise<WaveMember> {
  const fleet = { group, maxUnavailable: o.k, store: stores.config(kind), marginSeconds: 60, heartbeatSeconds: o.heartbeatSeconds ?? 20 };
  const config = asBudget(FleetConfig.parse(fleet));
  const store = (o.wrap ?? ((s) => s))(await openFleetStore(config.store, group));
  const view = { vm: memberVm(name), document: null as EventsDocument | null, goodReads: 1, approvalServerUrl: null };
  const journal = Store.open(':memory:').journal;
  const said: BridgeEvent[] = [];
  const route = (e: BridgeEvent) => ({ id: e.id, eventId: 'x', transition: 'fleet.collision', json: JSON.stringify(e), sinks: [] });
  const forecast = new Forecast({
    group,
    maxUnavailable: o.k,
    view,
    journal,
    logger: silent,
    route,
    committed: (e) => said.push(e),
    now: o.clock,
  });
  const budget = new FleetBudget({
    ...{ config, store, view, logger: silent, givenBack: () => true, now: o.clock },
    forecast: portOf(forecast),
  });
  return {
    ...{ name, budget, store, said },
    async read(events) {
      view.document = { incarnation: 1, events };
      await budget.onRead(view.document);
    },
    states: () => said.map((e) => (e.data as { collision: { state: string } }).collision.state),
  };
}

/** rebootOf: a Reboot of `vm`, Scheduled for `notBefore`. */
export function rebootOf(vm: string, eventId: string, notBefore: number, status: 'Scheduled' | 'Started' = 'Scheduled'): ScheduledEvent {
  return {
    ...{ eventId, eventType: 'Reboot', resourceType: 'VirtualMachine', resources: [vm], eventStatus: status },
    ...{ notBefore: new Date(notBefore).toISOString(), description: '', eventSource: 'Platform', durationInSeconds: -1, raw: {} },
  };
}
