/**
 * Forgetting members that no longer exist. A member whose record has not been written for
 * `forgetAfterSeconds` (and for three of its own heartbeats) is gone for good, as a scaled-in VM
 * is: its record is deleted, each delete conditional on the version read, so a member that comes
 * back and writes again is never deleted, and two members forgetting the same record delete it
 * once. A member that holds a slot is never forgotten. The members do it themselves as they
 * heartbeat (`Pruner`: a look now and then, a few deletes at most); `se-bridge fleet forget`
 * removes one at once (`forget`).
 */
import type { Logger } from 'pino';
import { visible } from '../../present/text-line.ts';
import { errorFields } from '../../lib/errors.ts';
import { MemberSchema } from './schemas.ts';
import { asSlot, live, staleAt, type MemberRecord } from './records.ts';
import type { FleetStore, Versioned } from './stores/port.ts';

/** The name of a member's record as this version writes it: `member-` and a member key. Nothing else is ever deleted. */
const MEMBER_RECORD = /^member-[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$/;

/** The most records one look deletes: a few requests, whatever the size of the group. */
export const MAX_FORGOTTEN_PER_LOOK = 3;

/** A member's record as the store holds it: its name, its version and what it says. */
export interface StoredMember {
  readonly name: string;
  readonly version: string;
  readonly record: MemberRecord;
}

/** storedMembers: the member records of a listing that read by their schema and are named as this version names them. */
export function storedMembers(list: readonly Versioned[]): StoredMember[] {
  return list.flatMap((r) => {
    const m = MemberSchema.safeParse(r.value);
    return m.success && MEMBER_RECORD.test(r.name) && r.name === `member-${m.data.member}`
      ? [{ name: r.name, version: r.version, record: m.data }]
      : [];
  });
}

/** silentFor: how long a member has not written its record (ms); Infinity when its heartbeat does not read as a time. */
export const silentFor = (m: MemberRecord, now: number): number => {
  const t = Date.parse(m.heartbeatAt);
  return Number.isFinite(t) ? now - t : Infinity;
};

/** holdsSlot: a slot record in the member's name whose recorded end has not passed. */
export const holdsSlot = (member: string, slots: readonly Versioned[], now: number): boolean =>
  slots.some((r) => {
    const s = asSlot(r.value);
    return s.member === member && live(s, now);
  });

/** forgettable: the members to forget now: silent for forgetAfterSeconds and three of their heartbeats, holding no slot, never `me`. */
export function forgettable(
  members: readonly StoredMember[],
  slots: readonly Versioned[],
  me: string,
  now: number,
  forgetAfterSeconds: number,
): StoredMember[] {
  return members.filter(
    (m) =>
      m.record.member !== me &&
      staleAt(m.record, now) &&
      silentFor(m.record, now) > forgetAfterSeconds * 1000 &&
      !holdsSlot(m.record.member, slots, now),
  );
}

/**
 * Pruner: when a member looks for members to forget, at its heartbeats: first at a random time
 * within forgetAfterSeconds / 8 (a day at most) after it starts, so members started together
 * spread their looks, then every 2 minutes per member of the group (an hour at least), so the
 * group as a whole looks about 30 times an hour however large it grows. A look is one list of
 * the members' records and at most MAX_FORGOTTEN_PER_LOOK conditional deletes.
 */
export class Pruner {
  readonly #store: FleetStore;
  readonly #logger: Logger;
  readonly #group: string;
  readonly #forgetAfterSeconds: number;
  #next: number | null = null;

  constructor(o: { store: FleetStore; logger: Logger; group: string; forgetAfterSeconds: number }) {
    this.#store = o.store;
    this.#logger = o.logger;
    this.#group = o.group;
    this.#forgetAfterSeconds = o.forgetAfterSeconds;
  }

  /**
   * prune looks for members to forget when it is time to (`slots`: the group's slot records, just
   * read), and forgets a few. It never throws: a look that fails (the store, or a role that may
   * not delete) is said in the log and made again at the next look, an hour on; it never closes
   * the budget.
   */
  async prune(slots: readonly Versioned[], me: string, now: number): Promise<void> {
    this.#next ??= now + Math.random() * Math.min(86_400_000, (this.#forgetAfterSeconds * 1000) / 8);
    if (now < this.#next) return;
    this.#next = now + 3_600_000;
    try {
      const members = storedMembers(await this.#store.list('member-'));
      this.#next = now + Math.max(3_600_000, members.length * 120_000);
      for (const m of forgettable(members, slots, me, now, this.#forgetAfterSeconds).slice(0, MAX_FORGOTTEN_PER_LOOK)) {
        // conditional on the version read: a member that wrote meanwhile is back, and is kept
        if (!(await this.#store.remove(m.name, m.version))) continue;
        this.#logger.info(
          { code: 'FLEET_MEMBER_FORGOTTEN', group: this.#group, vm: m.record.vm, record: m.name, heartbeatAt: m.record.heartbeatAt },
          `fleet budget: forgot ${visible(m.record.vm)}, whose record was last written ${m.record.heartbeatAt} (forgetAfterSeconds: ${this.#forgetAfterSeconds})`,
        );
      }
    } catch (err) {
      this.#logger.warn(
        { ...errorFields(err), group: this.#group },
        'fleet budget: could not forget the members gone for good; tried again in an hour',
      );
    }
  }
}

/** What `se-bridge fleet forget` came to: removed, refused (and why), or no such member. */
export type ForgetOutcome =
  | { readonly removed: StoredMember; readonly slot: { readonly name: string; readonly until: string | null } | null }
  | { readonly refused: string };

/**
 * forgetMember removes the record of the member `vm` names (its VM name or resource id, in any
 * case) from the group's store, conditional on the version read. Without `force` it refuses a
 * member whose record is fresh (it is alive, and would write it again) or that holds a slot.
 */
export async function forgetMember(store: FleetStore, group: string, vm: string, force: boolean, now: number): Promise<ForgetOutcome> {
  const [listed, slots] = await Promise.all([store.list('member-'), store.list('slot-')]);
  const want = vm.toLowerCase();
  const named = storedMembers(listed).filter((m) => m.record.vm.toLowerCase() === want || m.record.resourceId?.toLowerCase() === want);
  if (named.length === 0) return { refused: `group ${group} has no member ${visible(vm)} (by VM name or resource id)` };
  if (named.length > 1)
    return {
      refused: `${named.length} members of group ${group} are named ${visible(vm)} (${named.map((m) => visible(m.record.resourceId ?? m.name)).join(', ')}): name one by its resource id`,
    };
  const m = named[0]!;
  const held = slots.find((r) => asSlot(r.value).member === m.record.member && live(asSlot(r.value), now));
  const slot = held === undefined ? null : { name: held.name, until: asSlot(held.value).until ?? null };
  const who = visible(m.record.vm);
  if (!force && !staleAt(m.record, now))
    return {
      refused: `${who} wrote its record ${ago(silentFor(m.record, now))} ago (${visible(m.record.heartbeatAt)}, every ${m.record.heartbeatSeconds} s): it is alive, and writes it again at its next heartbeat; --force removes it all the same`,
    };
  if (!force && slot !== null)
    return {
      refused: `${who} holds ${slot.name} until ${visible(slot.until ?? 'its holder gives it back')}: it counts as down until then, whether its record is kept or not; --force removes its record all the same`,
    };
  if (!(await store.remove(m.name, m.version)))
    return { refused: `the record of ${who} changed while it was read (its member wrote it again?): nothing was removed` };
  return { removed: m, slot };
}

/** ago: a duration in words, to the largest whole unit. */
function ago(ms: number): string {
  if (!Number.isFinite(ms)) return 'long';
  const s = Math.max(0, Math.round(ms / 1000));
  return s < 120
    ? `${s} s`
    : s < 7200
      ? `${Math.round(s / 60)} min`
      : s < 172_800
        ? `${Math.round(s / 3600)} h`
        : `${Math.round(s / 86_400)} days`;
}
