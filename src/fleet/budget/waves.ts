/**
 * The group's collision waves: one id for one wave of overlapping maintenance windows, whichever
 * member finds it first and however it grows or shrinks as members are seen or complete. The
 * waves live in one record of the store (`collisions`), written only with its conditional write:
 * a member that finds a collision reads it, takes the id of the wave that shares an EventId with
 * its collision (adding the EventIds it did not have), or adds a wave; two members that add one
 * at once cannot both win, and the loser finds the winner's wave when it reads again. Each member
 * remembers the waves it knows, so a collision seen again costs no request.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { sleep, spread } from '../../lib/time.ts';
import { FleetStoreError, type FleetStore } from './stores/port.ts';

export const WAVES_NAME = 'collisions';

export interface Wave {
  readonly id: string;
  readonly eventIds: readonly string[];
  /** Past this time (the wave's last window's end), the wave is forgotten. */
  readonly to: string;
}

const WavesSchema = z.object({
  waves: z.array(z.object({ id: z.string(), eventIds: z.array(z.string()), to: z.string() })),
});

/** How long after its last window a wave is kept (a late completion still finds it). */
const KEEP_MS = 3_600_000;
/** Each round one writer wins; the members of one wave that find it at once need as many rounds as there are of them at most. */
const MAX_ROUNDS = 32;

/** waveIdOf: the id a new wave takes: a digest of the group and the EventIds it was found with. */
export function waveIdOf(group: string, eventIds: readonly string[]): string {
  return createHash('sha256')
    .update(`${group}\n${[...eventIds].sort().join('\n')}`)
    .digest('hex')
    .slice(0, 40);
}

export class Waves {
  readonly #store: FleetStore;
  readonly #group: string;
  readonly #now: () => number;
  /** The waves this member knows, by EventId. */
  readonly #known = new Map<string, Wave>();

  constructor(store: FleetStore, group: string, now: () => number = Date.now) {
    this.#store = store;
    this.#group = group;
    this.#now = now;
  }

  /** known: the wave this member knows that holds `eventId`, if any. */
  known(eventId: string): Wave | undefined {
    return this.#known.get(eventId);
  }

  /**
   * waveOf: the wave of a collision of these EventIds ending at `to`, from what this member knows
   * when it knows every one of them, else from the group's record (and written there).
   */
  async waveOf(eventIds: readonly string[], to: number): Promise<Wave> {
    const mine = eventIds.map((id) => this.#known.get(id)).find((w) => w !== undefined);
    if (mine !== undefined && eventIds.every((id) => mine.eventIds.includes(id))) return mine;
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const now = this.#now();
      const read = await this.#store.get(WAVES_NAME);
      const parsed = WavesSchema.safeParse(read?.value);
      const waves = (parsed.success ? parsed.data.waves : []).filter((w) => Date.parse(w.to) + KEEP_MS > now);
      const hit = waves.find((w) => w.eventIds.some((id) => eventIds.includes(id)));
      const wave: Wave =
        hit === undefined
          ? { id: waveIdOf(this.#group, eventIds), eventIds: [...eventIds], to: new Date(to).toISOString() }
          : {
              id: hit.id,
              eventIds: [...new Set([...hit.eventIds, ...eventIds])],
              to: new Date(Math.max(Date.parse(hit.to), to)).toISOString(),
            };
      const unchanged = hit !== undefined && wave.eventIds.length === hit.eventIds.length && wave.to === hit.to;
      const written =
        unchanged ||
        (await this.#store.put(WAVES_NAME, { waves: [...waves.filter((w) => w !== hit), wave] }, read?.version ?? null)) !== null;
      if (written) return this.#remember(wave);
      // another member wrote first: read again after a pause of a few milliseconds, varied, so the writers spread out
      await sleep(spread(20 * (round + 1), 0.5));
    }
    throw new FleetStoreError(`write ${WAVES_NAME}`, `other members wrote it first ${MAX_ROUNDS} times`);
  }

  /** forget drops a wave this member is done with (its own maintenance left it). */
  forget(wave: Wave): void {
    for (const id of wave.eventIds) if (this.#known.get(id)?.id === wave.id) this.#known.delete(id);
  }

  #remember(wave: Wave): Wave {
    if (this.#known.size > 10_000) this.#known.clear();
    for (const id of wave.eventIds) this.#known.set(id, wave);
    return wave;
  }
}
