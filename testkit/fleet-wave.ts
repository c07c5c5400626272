/**
 * A wave through a fleet budget, on a simulated clock: every member's maintenance appears at
 * once (NotBefore staggered by a second, the last member's first, so the queue's order is known),
 * every member reads IMDS twice a retry, each policy still waiting asks for a slot every retryMs
 * as the daemon does, and a holder's maintenance is over `holdMs` after its grant. Shared by the
 * fleet budget's tests and its benchmark (bench/fleet-cost.ts).
 */
import { ApprovalError } from '../src/approval/service.ts';
import type { FleetBudget } from '../src/fleet/budget/budget.ts';
import type { EventsDocument, ScheduledEvent } from '../src/imds/wire.ts';
import { scheduledFor } from './fleet-stores.ts';

export interface WaveMember {
  readonly vm: string;
  readonly budget: FleetBudget;
  readonly view: { document: EventsDocument | null };
}

export interface WaveOptions {
  readonly retryMs: number;
  readonly heartbeatSeconds: number;
  readonly holdMs: number;
  /** How long the wave runs, in simulated time. */
  readonly forMs: number;
  /** Sets the members' clock. */
  readonly setNow: (now: number) => void;
  readonly start: number;
}

/** inChunks runs `work` over the members, 50 at a time (a group's members do not all call at the same millisecond). */
export async function inChunks<T>(members: readonly T[], work: (m: T) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < members.length; i += 50) await Promise.all(members.slice(i, i + 50).map(work));
}

/** runWave returns the members in the order they were granted, with the simulated time of each grant. */
export async function runWave(members: readonly WaveMember[], o: WaveOptions): Promise<{ vm: string; at: number; index: number }[]> {
  const n = members.length;
  const events = new Map<WaveMember, ScheduledEvent | null>();
  const grantedAt = new Map<WaveMember, number>();
  o.setNow(o.start);
  for (const [i, m] of members.entries()) {
    const e = scheduledFor(m.vm, { notBefore: new Date(o.start + 3_600_000 + (n - i) * 1000).toISOString() });
    events.set(m, e);
    m.view.document = { incarnation: 2, events: [e] };
  }
  await inChunks(members, (m) => m.budget.onRead(m.view.document!));
  const beatEvery = Math.max(1, Math.round((o.heartbeatSeconds * 1000) / o.retryMs));
  for (let step = 0; step * o.retryMs < o.forMs; step++) {
    const now = o.start + step * o.retryMs;
    o.setNow(now);
    if (step % beatEvery === 0) await inChunks(members, (m) => m.budget.heartbeat());
    // a holder's maintenance is over: its event is gone at the next read, and the slot is given back
    for (const m of members) {
      const at = grantedAt.get(m);
      if (at === undefined || events.get(m) === null || now - at < o.holdMs) continue;
      events.set(m, null);
      m.view.document = { incarnation: 3, events: [] };
      await m.budget.onRead(m.view.document);
    }
    await inChunks(members, (m) => m.budget.onRead(m.view.document!));
    await inChunks(
      members.filter((m) => events.get(m) !== null && !grantedAt.has(m)),
      async (m) => {
        try {
          await m.budget.take(events.get(m)!, { by: 'policy', via: 'policy' });
          grantedAt.set(m, now);
        } catch (err) {
          if (!(err instanceof ApprovalError)) throw err;
        }
      },
    );
  }
  return [...grantedAt.entries()]
    .map(([m, at]) => ({ vm: m.vm, at, index: members.indexOf(m) }))
    .sort((a, b) => a.at - b.at || b.index - a.index);
}

/** outOfOrder: the grants made before that of a member whose NotBefore came earlier (a higher index). */
export function outOfOrder(grants: readonly { at: number; index: number }[]): number {
  return grants.filter((g) => grants.some((o) => o.at > g.at && o.index > g.index)).length;
}
