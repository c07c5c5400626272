/**
 * ForecastTurn: which member reads its group's records for the collision forecast (collisions.ts),
 * and what the others do instead. Reading every member's record is what a wave costs most as a
 * group grows, so with a budget of a fixed number of slots and no health checks only a few members
 * read the group:
 * - the member a wave's notice names as its speaker (wave-board.ts), at once when named, then at
 *   its heartbeats and as ForecastReads says (a quarter of a minute while it speaks, and when it is
 *   time to say the wave);
 * - while no live notice covers its maintenance, the members at which the budget's limit is reached
 *   (`atLimit`: as many stand ahead of it in the queue's head, or hold a slot, as the group has
 *   slots, or up to as many more), at the reads that foretell and its heartbeats: they name the
 *   wave's speaker in a notice. The first at the limit reads at once; the n-th past it only once
 *   n × NOTICE_STEP_MS have passed since it first found itself there and the wave still uncovered,
 *   so one of them writes the wave's first notice rather than all racing to, and the others read
 *   the group only should the first not have written it.
 * Every other member due learns of the wave, and of each word, from the notices listed with the
 * slots it reads anyway, and reads each word once from its speaker's record. With a percentage
 * (the group's size) or health checks (the members not healthy), every member due reads the group
 * as before: the limit depends on what only the group's records say.
 */
import type { ScheduledEvent } from '../../imds/wire.ts';
import { ForecastReads } from './forecast-reads.ts';
import { asSlot, type MemberRecord } from './records.ts';
import type { Versioned } from './stores/port.ts';
import { alive, covers, current, hintOf, WaveBoard, waveName, type Notice } from './wave-board.ts';
import type { BudgetOptions, ForecastPort } from './types.ts';
import type { Forecast } from './collisions.ts';
import type { WaveNotice } from './schemas.ts';

/** No forecast: a budget without one reads the group at the same times, for the queue's place and the members not healthy. */
export const NO_FORECAST: ForecastPort = {
  foretell: () => Promise.resolve(null),
  word: undefined,
  speakAt: null,
  seen: undefined,
  adopt: () => undefined,
  repeat: () => null,
  said: () => false,
};

export interface ForecastTurnOptions {
  readonly forecast: ForecastPort;
  readonly board: WaveBoard;
  /** Every member due reads the group (a percentage, or health checks). */
  readonly everyone: boolean;
  /** This member's key. */
  readonly me: () => string;
  /** The group's slots as last listed (the notices among them). */
  readonly slots: () => readonly Versioned[];
  /** Lists the group's slots afresh. */
  readonly readSlots: () => Promise<readonly Versioned[]>;
  /** Reads the members' records. */
  readonly readGroup: () => Promise<readonly MemberRecord[]>;
  /** How far past the budget's limit this member stands in the queue (0: the first at it), or null: not at it (see above). */
  readonly atLimit: () => Promise<number | null>;
  /** Writes this member's record (its word, before the notice names it). */
  readonly writeRecord: () => Promise<unknown>;
  readonly heartbeatSeconds: number;
  readonly now: () => number;
}

/**
 * How many of its heartbeats a member with a maintenance ahead that no live notice covers lets pass
 * between two reads of the group, besides those at the budget's limit: a wave that stands behind
 * another in the queue, where nobody is at the limit, is foretold within twice that many heartbeats
 * (each member waits that many and a part of as many again of its own before its first such read,
 * so a wave that appears is read first by the members at the limit, and the rest of the wave's
 * reads are spread).
 */
export const BACKSTOP_BEATS = 10;

/**
 * How long the n-th member past the budget's limit waits for each one before it (n of them) to
 * write a wave's first notice, from when it first found itself at the limit with its maintenance
 * uncovered: about two of their looks at the slots, where the notice shows.
 */
export const NOTICE_STEP_MS = 2000;

/**
 * How many of its heartbeats a member that handed its wave on (its own maintenance started with the wave past the budget) leaves
 * the notice to the member it named before it reads the group for the wave again: the member named sees the notice at its next
 * heartbeat at the latest (at most a fifth more than one), and takes the wave over or hands it on at once, writing the notice.
 */
export const HANDED_BEATS = 2;

const byName = (a: { readonly name: string }, b: { readonly name: string }): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/**
 * owes: the notice's wave was said and not said resolved, is not past, and spans a day at most; and
 * this member said or repeated that word (`said`), so it was due in the wave as a record it read
 * said (a notice alone puts no wave on a member).
 */
const owes = (n: WaveNotice, now: number, said: (id: string) => boolean): boolean =>
  n.word !== undefined && n.word.kind !== 'resolved' && said(n.word.said) && current(n, now);

export class ForecastTurn {
  readonly #o: ForecastTurnOptions;
  readonly #reads = new ForecastReads();
  /** The waves whose notice named this member their speaker: it read the group at once for each. */
  readonly #named = new Set<string>();
  /** This member's heartbeats while no live notice covered its maintenance, since its last read for the backstop (from a start of its own). */
  #uncovered = -Math.floor(Math.random() * BACKSTOP_BEATS);
  /** Since when this member stands at the budget's limit with its maintenance uncovered, how far past it, and whether its step came (null: it does not). */
  #limit: { readonly since: number; readonly rank: number; readonly stepped: boolean } | null = null;

  constructor(o: ForecastTurnOptions) {
    this.#o = o;
  }

  /**
   * after: at every good IMDS read (`wrote`: this member's record was just written) and heartbeat,
   * the group is read for the forecast when this member's turn says so; else the new words of the
   * notices that cover its maintenance are repeated.
   */
  async after(mine: readonly ScheduledEvent[], wrote: boolean, heartbeat: boolean): Promise<void> {
    const [f, now, me] = [this.#o.forecast, this.#o.now(), this.#o.me()];
    const speaks = f.seen?.speaker.member === me;
    const scheduled = mine.some((e) => e.eventStatus === 'Scheduled');
    const word = this.#o.everyone || speaks ? f.word : undefined;
    const timed = this.#reads.due(mine, wrote, now, word, f.speakAt) || (heartbeat && scheduled);
    if (this.#o.everyone) {
      if (timed) await this.#read(mine, now, me);
      return;
    }
    const [slots, hb] = [this.#o.slots(), this.#o.heartbeatSeconds];
    const all = this.#o.board.notices(slots);
    const notices = all.filter((n) => covers(n.value, mine, now));
    // the notice every member follows when two were written at once: the name that sorts first
    const live = notices.filter((n) => alive(n.value, now, hb)).sort(byName);
    // the speaker a notice names keeps its wave, its own maintenance under way or over, until it said the wave resolved; one that
    // handed it on takes it back once nobody wrote the notice for HANDED_BEATS heartbeats since (the member it named may never
    // have heard the wave's word, and so never take the wave)
    const ours = (n: Notice) =>
      n.value.speaker === me
        ? alive(n.value, now, hb)
        : this.#o.board.handedOn(n) && now - Date.parse(n.value.beat) >= HANDED_BEATS * hb * 1000;
    const duty = all.filter((n) => ours(n) && owes(n.value, now, (id) => f.said(id))).sort(byName)[0];
    const named = live.find((n) => n.value.speaker === me) ?? duty;
    // a notice of a wave whose word this member repeated, fallen silent: the wave goes on under its id, and is this member's to take
    // over should its speaker be due no more (at the reads of a member uncovered: at the budget's limit, or the backstop's)
    const silent = notices.find((n) => !alive(n.value, now, hb) && owes(n.value, now, (id) => f.said(id)));
    // the wave's id, speaker and latest word as that notice says them; silent, too, when it is one this member handed on (after it
    // took a silent notice over) and nobody renewed it since: the member it named never took it, so it is this member's to take again
    const chosen = live[0] ?? duty ?? silent;
    const hint = hintOf(chosen);
    f.adopt(hint && chosen !== undefined && chosen !== live[0] && !alive(chosen.value, now, hb) ? { ...hint, silent: true } : hint);
    const anew = named !== undefined && !this.#named.has(named.value.wave);
    if (anew) this.#remember(named.value.wave);
    const uncovered = scheduled && !notices.some((n) => alive(n.value, now, hb));
    const backstop = uncovered && heartbeat && ++this.#uncovered >= BACKSTOP_BEATS;
    if (backstop) this.#uncovered = 0;
    if (!uncovered) this.#limit = null;
    // behind the first at the limit, this member's step for the wave's first notice has come (once)
    const l = this.#limit;
    const step = l !== null && l.rank > 0 && !l.stepped && now - l.since >= l.rank * NOTICE_STEP_MS;
    let read = false;
    if (named !== undefined || speaks) read = timed || anew || (named === duty && heartbeat);
    else if (uncovered && (timed || step)) read = backstop || (await this.#atLimitReads(mine, now));
    // named the speaker of a wave whose word it has not said: the word first, from the record that holds it (it goes on from there)
    const unheard = read && named?.value.word !== undefined && !f.said(named.value.word.said) ? named : undefined;
    if (unheard) await this.#o.board.word(unheard, (id) => f.said(id)).then((w) => w && f.repeat(w));
    if (read) await this.#read(mine, now, me);
    else
      for (const n of notices) {
        const word = await this.#o.board.word(n, (id) => f.said(id), { me, now });
        if (word !== null) f.repeat(word);
      }
    if (heartbeat) await this.#o.board.prune(slots, now);
  }

  /**
   * atLimitReads: this member, uncovered, reads the group now as its place at the budget's limit
   * says: the first at it at once; the n-th once n steps have passed since it got there, and only
   * while the slots, listed afresh then, still show no live notice covering its maintenance.
   */
  async #atLimitReads(mine: readonly ScheduledEvent[], now: number): Promise<boolean> {
    const rank = await this.#o.atLimit();
    const [since, stepped] = [this.#limit?.since ?? now, this.#limit?.stepped === true];
    this.#limit = rank === null ? null : { since, rank, stepped: stepped || (rank > 0 && now - since >= rank * NOTICE_STEP_MS) };
    if (rank === null || rank === 0) return rank === 0;
    if (now - since < rank * NOTICE_STEP_MS) return false;
    // at its step, the slots listed afresh (a notice the first wrote since shows there); after it, as the last listing says
    if (stepped) return true;
    const notices = this.#o.board.notices(await this.#o.readSlots());
    return !notices.some((n) => covers(n.value, mine, now) && alive(n.value, now, this.#o.heartbeatSeconds));
  }

  async #read(mine: readonly ScheduledEvent[], now: number, me: string): Promise<void> {
    const records = await this.#o.readGroup();
    const f = this.#o.forecast;
    const before = f.word?.said;
    await f.foretell(
      records,
      this.#o.slots().map((r) => asSlot(r.value)),
    );
    if (this.#o.everyone) return;
    // a new word is in this member's record before the notice names it: a member that reads the record finds it
    if (f.word !== undefined && f.word.said !== before) await this.#o.writeRecord();
    let slots = this.#o.slots();
    // a notice this member would write anew, having said nothing: the slots listed afresh first (one that holds no slot lists them
    // at its heartbeats), and none written should a live notice cover its maintenance now (written since its last listing, under
    // the id of the wave as its writer saw it): it follows that one from its next look, so the wave keeps one id and one speaker
    const wave = f.seen === undefined ? undefined : waveName(f.seen.wave);
    if (wave !== undefined && f.word === undefined && !this.#o.board.notices(slots).some((n) => n.name === wave)) {
      slots = await this.#o.readSlots();
      const hb = this.#o.heartbeatSeconds;
      if (this.#o.board.notices(slots).some((n) => covers(n.value, mine, now) && alive(n.value, now, hb))) return;
    }
    await this.#o.board.publish(f.seen, f.word, me, slots, now);
  }

  #remember(wave: string): void {
    if (this.#named.size > 1000) this.#named.clear();
    this.#named.add(wave);
  }
}

/**
 * forecastTurnOf: the turn of a budget's member. Every member due reads the group with a
 * percentage or health checks (the limit depends on the group's records), or with no forecast.
 */
export function forecastTurnOf(
  o: BudgetOptions,
  parts: Pick<ForecastTurnOptions, 'me' | 'slots' | 'readSlots' | 'readGroup' | 'atLimit' | 'writeRecord' | 'now'>,
): ForecastTurn {
  const everyone = o.forecast === undefined || typeof o.config.maxUnavailable === 'string' || o.health !== undefined;
  const heartbeatSeconds = o.config.heartbeatSeconds;
  const board = new WaveBoard({ store: o.store, logger: o.logger, heartbeatSeconds });
  return new ForecastTurn({ ...parts, forecast: o.forecast ?? NO_FORECAST, board, everyone, heartbeatSeconds });
}

/** portOf: a forecast as the budget asks it; a failure to foretell is told to `failed` and says nothing. */
export function portOf(forecast: Forecast, failed: (err: unknown) => void = () => undefined): ForecastPort {
  return {
    foretell: (members, slots) =>
      forecast.foretell(members, slots).catch((err: unknown) => {
        failed(err);
        return null;
      }),
    get word() {
      return forecast.word;
    },
    get speakAt() {
      return forecast.speakAt;
    },
    get seen() {
      return forecast.seen;
    },
    adopt: (hint) => forecast.adopt(hint),
    repeat: (word) => forecast.repeat(word),
    said: (id) => forecast.said(id),
  };
}
