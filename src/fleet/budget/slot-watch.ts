/**
 * SlotWatch: while this member stands at the head of its group's queue (the first maxUnavailable
 * held there) and its store tells its changes as they are made (Leases: a Kubernetes watch), the
 * group's slots are watched: while the watch says every slot is held, the member does not look at
 * them at every IMDS read (only every retryMs, a backstop); a change that leaves a slot free wakes it
 * at once if its place is within the free slots (`wake`: it looks at the slots and asks, with no IMDS
 * read to wait for; the free slots go down the queue in order, so one further back is not), and from then on
 * it looks at every read again, as without a watch, until it is granted or the slots are all held
 * again. A slot past its recorded end (which no Lease says) counts as free from that moment. The
 * look itself is a list, as before: the watch only says when to look.
 *
 * Its cost: one open watch per member at the head (maxUnavailable of them), each told of every
 * change to the group's slot Leases; in place of a list by each of them at every IMDS read while
 * the slots are all held. While the watch is down (it failed, or is still listing) the member looks
 * at every read as without one.
 */
import type { Logger } from 'pino';
import { errorFields } from '../../lib/errors.ts';
import { asSlot, live, SLOT_PREFIX } from './records.ts';
import type { FleetStore, FleetStoreError, Versioned } from './stores/port.ts';
import type { BudgetOptions } from './types.ts';
import { QueuePlace } from './queue.ts';
import { turnsOf } from './served.ts';

export interface SlotWatchOptions {
  readonly store: FleetStore;
  readonly group: string;
  readonly logger: Logger;
  /** How many slots the group has now. */
  readonly k: () => number;
  readonly now: () => number;
  /** `free` slots are free (and the holders changed since it last said so): look at the slots now, if it may be this member's turn. */
  readonly wake: (free: number) => void;
}

export class SlotWatch {
  readonly #o: SlotWatchOptions;
  #stop: AbortController | null = null;
  /** The slots as the watch last said them; null while it is not open and current. */
  #slots: readonly Versioned[] | null = null;
  /** The live slots as last seen (name and holder), so a renewal, or a notice written, wakes nobody. */
  #holders: string | null = null;
  /** A failure was said already: one before the watch was ever current (a Role without `watch`) is said once. */
  #said = false;
  /** Closed for good (the budget's run ended): never opened again. */
  #ended = false;

  constructor(options: SlotWatchOptions) {
    this.#o = options;
  }

  /** records: the slots as the watch last said them, while it is open and current (else null). */
  get records(): readonly Versioned[] | null {
    return this.#stop === null ? null : this.#slots;
  }

  /**
   * full: the watch is open and current, and every slot is held (live now) as it last said: the
   * member may wait for it rather than look at every read. A slot free, or past its recorded end
   * by now (which no Lease says), and the member looks at every read as without a watch: it is
   * held then for some other reason (its turn, a first ask) that only a look tells.
   */
  get full(): boolean {
    const now = this.#o.now();
    return this.#stop !== null && this.#slots !== null && this.#slots.filter((r) => live(asSlot(r.value), now)).length >= this.#o.k();
  }

  /** want opens the watch (`on`: the member stands at the head of the queue) or closes it; a store without watches has none. */
  want(on: boolean): void {
    const watch = this.#o.store.watch?.bind(this.#o.store);
    if (on && this.#stop === null && watch !== undefined && !this.#ended) {
      const stop = new AbortController();
      this.#stop = stop;
      void watch(SLOT_PREFIX, stop.signal, (records, why) => {
        if (this.#stop === stop) this.#seen(records, why);
      }).catch((err: unknown) =>
        this.#o.logger.warn({ group: this.#o.group, ...errorFields(err) }, 'fleet budget: the watch of the slots ended'),
      );
    } else if (!on && this.#stop !== null) this.close();
  }

  /** end closes the watch for good (the budget's run ended): a member that comes to the head after it opens none. */
  end(): void {
    this.#ended = true;
    this.close();
  }

  close(): void {
    this.#stop?.abort();
    [this.#stop, this.#slots, this.#holders] = [null, null, null];
  }

  #seen(records: readonly Versioned[] | null, why?: FleetStoreError): void {
    if (records === null) {
      if (this.#slots !== null || !this.#said)
        this.#o.logger.warn(
          { group: this.#o.group, ...errorFields(why) },
          'fleet budget: the watch of the slots failed; the head of the queue looks at every read until it is back',
        );
      [this.#slots, this.#holders, this.#said] = [null, null, true];
      return;
    }
    this.#slots = records;
    const now = this.#o.now();
    const held = records.filter((r) => live(asSlot(r.value), now));
    const holders = held
      .map((r) => `${r.name}\u0000${asSlot(r.value).member ?? ''}`)
      .sort()
      .join('\u0001');
    if (holders === this.#holders) return;
    this.#holders = holders;
    if (held.length < this.#o.k()) this.#o.wake(this.#o.k() - held.length);
  }
}

/** watchedPlace: the member's place in the queue and the watch of its slots, each telling the other: the place when it comes to the head, the watch when a slot is free. */
export function watchedPlace(
  o: BudgetOptions,
  { k, slots }: { readonly k: () => number; readonly slots: () => readonly Versioned[] },
): [QueuePlace, SlotWatch] {
  const now = o.now ?? Date.now;
  // the takes counted from the watch's slots while it is current (fresher than the last listing), else from that listing
  const turns = () => turnsOf(watch.records ?? slots(), now());
  const place: QueuePlace = new QueuePlace({
    ...o.config,
    ...{ maxUnavailable: k, turns, watched: () => watch.full, onHead: (head: boolean) => watch.want(head) },
  });
  const wake = (free: number): void => {
    if (place.wake(free)) o.hooks?.onWake?.();
  };
  const watch = new SlotWatch({ store: o.store, group: o.config.group, logger: o.logger, k, now, wake });
  return [place, watch];
}
