/**
 * Gate and gated: a fleet store whose chosen call waits at a gate the test opens, so that two
 * members racing for a slot are ordered by the test, not by timers.
 */
import { asSlot } from '../src/fleet/budget/records.ts';
import type { FleetStore } from '../src/fleet/budget/stores/port.ts';

/** Gate: a point a store call waits at, once `armed`: `reached` once a call is there, `open` lets it (and every later one) on. */
export class Gate {
  armed = false;
  reached = false;
  open!: () => void;
  readonly opened = new Promise<void>((resolve) => (this.open = resolve));
  async pass(): Promise<void> {
    this.reached = true;
    await this.opened;
  }
}

/** gated: the store, with its first call that `at` picks (by method and record name) once the gate is armed held at it. */
export function gated(at: (method: 'put' | 'list', name: string, value?: unknown) => boolean, gate: Gate): (s: FleetStore) => FleetStore {
  const stop = async (method: 'put' | 'list', name: string, value?: unknown) => {
    if (gate.armed && at(method, name, value)) {
      gate.armed = false;
      await gate.pass();
    }
  };
  return (s) => ({
    where: s.where,
    get: (...args) => s.get(...args),
    remove: (...args) => s.remove(...args),
    close: () => s.close(),
    put: async (name, value, version, signal) => {
      await stop('put', name, value);
      return s.put(name, value, version, signal);
    },
    list: async (prefix, signal) => {
      await stop('list', prefix);
      return s.list(prefix, signal);
    },
    head: async (prefix, limit, signal) => {
      await stop('list', prefix);
      return s.head(prefix, limit, signal);
    },
  });
}

/** A slot write in a member's name, not an overflow record. */
export const slotWrite = (method: string, name: string, value?: unknown) =>
  method === 'put' && /^slot-\d+$/.test(name) && asSlot(value).member !== null;
/** The first read of the slots. */
export const slotRead = (method: string, name: string) => method === 'list' && name.startsWith('slot-');
