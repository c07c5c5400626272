/**
 * ForecastReads: when a member reads the group's records for the collision forecast (collisions.ts),
 * besides its heartbeats.
 */
import type { ScheduledEvent } from '../../imds/wire.ts';
import { SPEAKER_READ_MS, type WaveWord } from './waves.ts';

/**
 * ForecastReads says when this member reads the group's records for the forecast: at the read
 * that writes a new or changed maintenance of its own, and again one and five seconds later (the
 * members of one wave see their events within a read or two of each other, so the last of them
 * is seen at once, not a heartbeat later). The speaker of a wave not yet within the budget also
 * reads it every SPEAKER_READ_MS (its next word is due at most a minute after the last), and once
 * its own maintenance has started, and one and five seconds later: the queue serves it last, so the
 * wave is within the budget then, as soon as the members' records catch up with their slots.
 */
export class ForecastReads {
  readonly #seen = new Map<string, string>();
  /** The events of this member seen Scheduled that have left it (Started). */
  readonly #left = new Set<string>();
  #again: number[] = [];
  #spoke = -Infinity;
  /** The speakAt this member last read the group for. */
  #readFor = NaN;

  /**
   * due: whether to read the group now, given this member's events, whether its record was just
   * written, the word it last said as a speaker, and `speakAt` (Forecast.speakAt: when it is to say
   * a wave it has seen and not said yet; read once then).
   */
  due(mine: readonly ScheduledEvent[], wrote: boolean, now: number, word?: WaveWord, speakAt: number | null = null): boolean {
    const listed = new Set(mine.map((e) => e.eventId));
    for (const id of this.#seen.keys()) if (!listed.has(id)) this.#seen.delete(id);
    for (const id of this.#left) if (!listed.has(id)) this.#left.delete(id);
    const fresh = wrote ? mine.filter((e) => e.eventStatus === 'Scheduled' && this.#seen.get(e.eventId) !== (e.notBefore ?? '')) : [];
    for (const e of fresh) this.#seen.set(e.eventId, e.notBefore ?? '');
    if (fresh.length > 0) this.#again = [now + 1000, now + 5000];
    const again = this.#again.length > 0 && this.#again[0]! <= now;
    this.#again = this.#again.filter((t) => t > now);
    const left = mine.filter((e) => e.eventStatus !== 'Scheduled' && this.#seen.has(e.eventId) && !this.#left.has(e.eventId));
    for (const e of left) this.#left.add(e.eventId);
    const speaking = word !== undefined && word.kind !== 'resolved';
    // once its maintenance started, again a second and five seconds later: the members' records catch up with the slots
    if (speaking && left.length > 0) this.#again = [now + 1000, now + 5000];
    const speaks = speaking && (left.length > 0 || now - this.#spoke >= SPEAKER_READ_MS);
    if (speaks) this.#spoke = now;
    // the speaker of a wave not said yet reads once more when it is time to say it
    const ripe = speakAt !== null && speakAt <= now && speakAt !== this.#readFor;
    if (ripe) this.#readFor = speakAt;
    return fresh.length > 0 || again || speaks || ripe;
  }
}
