/**
 * The group's notices of its collision waves: one small record per wave, `slot-wave-<wave id>`,
 * listed with the slots, which every member lists at its looks and heartbeats anyway. A notice
 * names the member that speaks for the wave, the wave's span, when its speaker last wrote it, and
 * the wave's latest word with the member whose record holds it. A member due in a wave learns of
 * it and of each word from the notice, and reads that word from that one record (not the group's)
 * to repeat it under the same id. Few members write a notice: one that read the group and found
 * the wave while no live notice covered it (forecast-turn.ts says who reads), naming its speaker,
 * and then the speaker, at each word and heartbeat. Nothing in a notice is trusted beyond its
 * schema: a key only names a record of the group (never a path or URL), and a word is repeated only
 * when the record it names says it, that member is due in the wave, and this member's own event is.
 */
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { ScheduledEvent } from '../../imds/wire.ts';
import { errorFields } from '../../lib/errors.ts';
import { membersOf } from './parse.ts';
import { CLOCK_SKEW_MS, memberName, WAVE_PREFIX } from './records.ts';
import { WaveNoticeSchema, type WaveNotice } from './schemas.ts';
import type { FleetStore, Versioned } from './stores/port.ts';
import { KEEP_MS, type SeenWave, type WaveHint, type WaveWord } from './waves.ts';
import { TYPICAL_MAINTENANCE_MS } from './windows.ts';

export const waveName = (wave: string): string => `${WAVE_PREFIX}${wave}`;

/** A notice as listed: its name, version and what it says. */
export interface Notice {
  readonly name: string;
  readonly version: string;
  readonly value: WaveNotice;
}

/** noticesOf: the notices of a listing of the slots that read by their schema and sit under their wave's name. */
export const noticesOf = (slots: readonly Versioned[]): Notice[] =>
  slots.flatMap((r) => {
    if (!r.name.startsWith(WAVE_PREFIX)) return [];
    const n = WaveNoticeSchema.safeParse(r.value);
    return n.success && r.name === waveName(n.data.wave) ? [{ name: r.name, version: r.version, value: n.data }] : [];
  });

/**
 * The longest span a notice may say: a wave is the windows that overlap at its busiest moment, and
 * what was seen of it since, hours at most. A notice that says more (to cover every member's
 * maintenance, and so silence the forecast) covers nothing.
 */
export const MAX_WAVE_SPAN_MS = 86_400_000;

/**
 * How long after a word first shows in a notice the members read it, each at a moment of its own
 * within it: a thousand members read the speaker's record some 200 times a second, within what
 * Azure sustains on one blob (500), and every copy is out within a few seconds of the word.
 */
const SPREAD_MS = 5000;

/** How often a member reads a word its notice names and its speaker's record does not say yet (written a moment later), before it gives up. */
const WORD_TRIES = 5;

/**
 * alive: the speaker wrote the notice within three heartbeats (of its own, and at most of the
 * reader's: a notice cannot claim a longer life than the group's members beat at), and not from a
 * clock further ahead than any member's runs.
 */
export const alive = (n: WaveNotice, now: number, heartbeatSeconds: number): boolean => {
  const at = Date.parse(n.beat);
  return at - now <= CLOCK_SKEW_MS && now - at <= 3 * Math.min(n.heartbeatSeconds, heartbeatSeconds) * 1000;
};

/** current: the notice's wave spans a day at most and is not past (one that says more covers nothing). */
export const current = (n: WaveNotice, now: number): boolean => {
  const [from, to] = [Date.parse(n.from), Date.parse(n.to)];
  return to + KEEP_MS > now && to - from <= MAX_WAVE_SPAN_MS;
};

/** covers: the notice's wave (a span of a day at most) meets one of these events (this member's) while it is Scheduled, and is not past. */
export function covers(n: WaveNotice, mine: readonly ScheduledEvent[], now: number): boolean {
  if (!current(n, now)) return false;
  const [from, to] = [Date.parse(n.from), Date.parse(n.to)];
  return mine.some((e) => {
    const at = e.eventStatus === 'Scheduled' && e.notBefore ? Date.parse(e.notBefore) : NaN;
    return Number.isFinite(at) && at < to && at + Math.max(TYPICAL_MAINTENANCE_MS, e.durationInSeconds * 1000) > from;
  });
}

/** hintOf: what a notice tells the forecast: the wave's id, its speaker's VM, and its latest word (as a word of no copy). */
export function hintOf(n: Notice | undefined): WaveHint | undefined {
  if (n === undefined) return undefined;
  const { wave, vm, from, to, word } = n.value;
  const said = word && { wave, said: word.said, kind: word.kind, at: word.at, from, to, due: 0 };
  return { wave, speaker: vm.toLowerCase(), member: n.value.speaker, ...(said === undefined ? {} : { word: said }) };
}

export interface WaveBoardOptions {
  readonly store: FleetStore;
  readonly heartbeatSeconds: number;
  readonly logger: Logger;
}

export class WaveBoard {
  readonly #o: WaveBoardOptions;
  /** The notices this member wrote last, by name: what a listing read before the write does not show yet. */
  readonly #wrote = new Map<string, Notice>();
  /** The notices this member wrote last naming another member (it handed the wave on), by name: the version it wrote. */
  readonly #handed = new Map<string, string>();
  /** The words this member read for (their CloudEvent ids), and how often: each is read until found, WORD_TRIES times at most. */
  readonly #fetched = new Map<string, number>();
  /** When this member first saw each word in a notice (its CloudEvent id). */
  readonly #seenAt = new Map<string, number>();

  constructor(o: WaveBoardOptions) {
    this.#o = o;
  }

  /** notices: the notices of the slots as last listed, with those this member wrote since. */
  notices(slots: readonly Versioned[]): Notice[] {
    const listed = noticesOf(slots);
    for (const n of listed) if (this.#wrote.get(n.name)?.version === n.version) this.#wrote.delete(n.name);
    const byName = new Map(listed.map((n) => [n.name, n]));
    for (const [name, n] of this.#wrote) {
      const other = byName.get(name);
      if (other === undefined || Date.parse(other.value.beat) < Date.parse(n.value.beat)) byName.set(name, n);
    }
    return [...byName.values()];
  }

  /**
   * publish writes the notice of the wave this member read (`seen`): the speaker writes its own
   * (its latest word, at each word, and its beat at a heartbeat); another member writes one only
   * when no live notice covers the wave (it saw it first, or its speaker went silent), or to hand
   * the wave on when the notice names it and it is the speaker no more.
   */
  async publish(
    seen: SeenWave | undefined,
    word: WaveWord | undefined,
    me: string,
    slots: readonly Versioned[],
    now: number,
  ): Promise<void> {
    if (seen?.wave === undefined) return;
    const name = waveName(seen.wave);
    const all = this.notices(slots);
    const current = all.find((n) => n.name === name);
    const speaks = seen.speaker.member === me;
    const hb = this.#o.heartbeatSeconds;
    // the wave has a live notice: its own, or one of a span it meets naming the same speaker (another wave, another speaker, is none)
    const meets = (n: Notice) => Date.parse(n.value.from) < seen.to && Date.parse(n.value.to) > seen.from;
    const covered = all.some((n) => alive(n.value, now, hb) && (n.name === name || (meets(n) && n.value.speaker === seen.speaker.member)));
    // the wave's speaker writes it, and the one the notice names (handing it on); another only when that one is due no more
    const handed = seen.handed === true && current !== undefined && current.value.speaker !== seen.speaker.member;
    if (!speaks && covered && current?.value.speaker !== me && !handed) return;
    // the word the notice names, and whose record holds it (handed on, the speaker that said it)
    const kept = current?.value.word && { ...current.value.word, by: current.value.word.by ?? current.value.speaker };
    // the record that holds a word with its copy: this speaker's own, else the one the notice named (a word taken over); a
    // speaker that hands the wave on puts its last word in the notice as it does
    const said =
      (speaks || current?.value.speaker === me) && word !== undefined && word.wave === seen.wave
        ? { said: word.said, kind: word.kind, at: word.at, by: word.copy !== undefined || kept?.said !== word.said ? me : kept.by }
        : kept;
    const value: WaveNotice = {
      ...{ member: null, wave: seen.wave, speaker: seen.speaker.member, vm: seen.speaker.vm },
      ...{ from: new Date(seen.from).toISOString(), to: new Date(seen.to).toISOString(), beat: new Date(now).toISOString() },
      ...{ heartbeatSeconds: this.#o.heartbeatSeconds, ...(said === undefined ? {} : { word: said }) },
    };
    const c = current?.value;
    const same =
      c !== undefined && c.speaker === value.speaker && c.from === value.from && c.to === value.to && c.word?.said === said?.said;
    // unchanged, and written within half a heartbeat: nothing to write
    if (same && now - Date.parse(c.beat) < (this.#o.heartbeatSeconds * 1000) / 2) return;
    const version = await this.#o.store.put(name, value, current?.version ?? null);
    if (version === null) return;
    this.#wrote.set(name, { name, version, value });
    if (this.#handed.size > 1000) this.#handed.clear();
    if (value.speaker === me) this.#handed.delete(name);
    else this.#handed.set(name, version);
  }

  /** handedOn: this member wrote the notice as listed, naming another member (it handed the wave on), and nobody wrote it since. */
  handedOn(n: Notice): boolean {
    return this.#handed.get(n.name) === n.version;
  }

  /**
   * word: the word the notice names, as its speaker's own record says it, when this member has not
   * said it yet (`said`); null otherwise. The record is read until it says that word (the speaker
   * writes its record a moment after the notice), WORD_TRIES times at most; a store that fails is
   * one try. A record that does not read, is another member's, or whose member is not due in the
   * wave (none of its events is one the word names due, unless the word says it resolved) says nothing.
   */
  async word(n: Notice, said: (id: string) => boolean, when?: { readonly me: string; readonly now: number }): Promise<WaveWord | null> {
    const id = n.value.word?.said;
    const tries = id === undefined ? 0 : (this.#fetched.get(id) ?? 0);
    if (id === undefined || said(id) || tries >= WORD_TRIES || (when !== undefined && !this.#due(id, when.me, when.now))) return null;
    if (this.#fetched.size > 10_000) this.#fetched.clear();
    this.#fetched.set(id, tries + 1);
    const by = n.value.word?.by ?? n.value.speaker;
    const record = await this.#o.store.get(memberName(by)).catch((err: unknown) => {
      this.#o.logger.debug({ speaker: by, ...errorFields(err) }, "fleet budget: could not read a wave's word");
      return null;
    });
    const m = record === null ? undefined : membersOf([record])[0];
    const w = m?.member === by ? m.wave : undefined;
    if (m === undefined || w === undefined || w.wave !== n.value.wave || w.said !== id) return null;
    const due = new Set(w.copy?.due.map((d) => d.eventId));
    if (w.kind !== 'resolved' && !m.events.some((e) => due.has(e.eventId))) return null;
    this.#fetched.set(id, WORD_TRIES);
    return w;
  }

  /**
   * due: whether this member's time to read word `id` has come: each member waits a part of
   * SPREAD_MS of its own (from a digest of its key and the word) after it first saw the word, so
   * the members of a large group do not all read the speaker's record in one second.
   */
  #due(id: string, me: string, now: number): boolean {
    if (this.#seenAt.size > 10_000) this.#seenAt.clear();
    const first = this.#seenAt.get(id) ?? now;
    this.#seenAt.set(id, first);
    const spread = createHash('sha256').update(`${me}\n${id}`).digest().readUInt32BE(0) % SPREAD_MS;
    return now - first >= spread;
  }

  /**
   * prune removes one notice whose wave is past (KEEP_MS after its end), or that its speaker has
   * not renewed for KEEP_MS, at a heartbeat; another member removing it first is no failure.
   */
  async prune(slots: readonly Versioned[], now: number): Promise<void> {
    const past = (n: Notice) => Date.parse(n.value.to) + KEEP_MS <= now || !(now - Date.parse(n.value.beat) < KEEP_MS);
    const gone = noticesOf(slots).find(past);
    if (gone === undefined) return;
    await this.#o.store.remove(gone.name, gone.version).catch((err: unknown) => {
      this.#o.logger.debug({ notice: gone.name, ...errorFields(err) }, 'fleet budget: could not remove a past wave notice');
    });
    this.#wrote.delete(gone.name);
  }
}
