/**
 * The collision forecast: when the members' records show more members due for maintenance at
 * once than the group allows, and this VM is one of them, it commits a `fleet.collision`
 * CloudEvent, routed like any other change. One wave of overlapping windows has one speaker, the
 * member due in it that the group's queue serves last (waves.ts): it says the wave once it has seen it for
 * a few seconds (foreseen), again at most once a minute while the members due change (updated,
 * the latest set), and once when it is within the budget (resolved), and writes each word in its
 * member record. Every other member due repeats the speaker's latest word, read in the listing,
 * under the same CloudEvent id, with `data.collision.id` the wave's id, so a consumer that
 * deduplicates sees each word once. Chat updates its message of the member's maintenance in place.
 */
import type { Logger } from 'pino';
import type { BridgeView } from '../../imds/view.ts';
import type { ScheduledEvent } from '../../imds/wire.ts';
import { handedWave, idsOf, selfOf } from './wave-handed.ts';
import { CLOCK_SKEW_MS, staleAt, type MemberRecord, type SlotRecord } from './records.ts';
import { collisionWith, windowsOf, type Window } from './windows.ts';
import { MARGIN_SECONDS, slotsFor, UNHEALTHY_COUNTS_FOR_SECONDS } from './config.ts';
import { unavailableOf, type Unhealthy } from './unavailable.ts';
import type { BridgeEvent } from '../../pipeline/cloudevent.ts';
import { collisionIdOf } from '../../pipeline/notices.ts';
import { commitCollision, copyOf, infoOf, infoOfCopy } from './collision-say.ts';
import type { Journal, PendingEvent } from '../../store/store.ts';
import {
  KEEP_MS,
  SETTLE_MS,
  speakerOf,
  seenOf,
  type Known,
  type WaveHint,
  type SeenWave,
  nextWord,
  servedOf,
  waveIdOf,
  wordsAbout,
  type WaveWord,
} from './waves.ts';

export interface CollisionDeps {
  readonly group: string;
  /** maxUnavailable as configured: a number, or a percentage of the members with a fresh record. */
  readonly maxUnavailable: number | string;
  readonly view: BridgeView;
  readonly journal: Journal;
  readonly logger: Logger;
  readonly route: (event: BridgeEvent) => PendingEvent;
  /** Called after the collision was committed. */
  readonly committed: (event: BridgeEvent) => void;
  /** The group's settle time (fleet.health.settleSeconds): a member is unavailable that long past its window. */
  readonly settleSeconds?: number;
  /** How long a member not healthy counts against the group (fleet.unhealthyCountsForSeconds; an hour unless said). */
  readonly unhealthyCountsForSeconds?: number;
  /** What is added to a holder's recorded end (fleet.marginSeconds; half an hour unless said). */
  readonly marginSeconds?: number;
  readonly now?: () => number;
}

export class Forecast {
  readonly #d: CollisionDeps;
  readonly #now: () => number;
  #known: Known | undefined;
  /** The last word this member said as the wave's speaker: written in its record. */
  #word: WaveWord | undefined;
  /** The last word of another speaker this member repeated: should it speak for the wave next, it goes on from there. */
  #repeated: WaveWord | undefined;
  /** When this member, the speaker of a wave it has seen and not said yet, says it (the group is read again then). */
  #speakAt: number | null = null;
  /** Whether this member was its wave's speaker at its last look while due in it. */
  #speaker = false;
  /** This member's own event in the wave, as last seen (its copy of a word carries it). */
  #own: ScheduledEvent | undefined;
  /** The CloudEvent ids of the words this member said or repeated. */
  readonly #said = new Set<string>();
  /** The group's slots at the last read of its members. */
  #k = 1;
  /** The members not healthy now, outside the wave: the group has that many slots less for it. */
  #unhealthy: Unhealthy[] = [];
  /** The id the wave's notice gives it (wave-board.ts): its first word takes it. */
  #hint: WaveHint | undefined;
  /** The wave this member is due in, as its last read of the group showed it. */
  #seen: SeenWave | undefined;
  /** The event of this member's that it said or repeated a word about last (a wave handed to it after it is resolved about it). */
  #lastOwn: ScheduledEvent | undefined;

  constructor(deps: CollisionDeps) {
    this.#d = deps;
    this.#now = deps.now ?? Date.now;
  }

  /** word: the last word this member said as its wave's speaker, for its member record (until the wave is past). */
  get word(): WaveWord | undefined {
    if (this.#word !== undefined && Date.parse(this.#word.to) + KEEP_MS <= this.#now()) this.#word = undefined;
    return this.#word;
  }

  /** speakAt: when this member, the speaker of a wave seen and not said yet, says it if the wave is still over the budget then; null when it waits for nothing. */
  get speakAt(): number | null {
    return this.#speakAt;
  }

  /** seen: the wave this member is due in as its last read of the group showed it (its id, speaker and span); undefined when none. */
  get seen(): SeenWave | undefined {
    return this.#seen;
  }

  /** adopt: what the wave's notice says: its id (the wave's first word takes it), its speaker (while due), and its latest word. */
  adopt(hint: WaveHint | undefined): void {
    this.#hint = hint;
  }

  /** said: whether this member said or repeated the word of this CloudEvent id. */
  said(id: string): boolean {
    return this.#said.has(id);
  }

  /**
   * repeat says another member's word as its speaker's record says it, without a read of the group:
   * when its copy names this member's own event, still Scheduled; null otherwise, or said before.
   */
  repeat(word: WaveWord): BridgeEvent | null {
    const [document, copy, me] = [this.#d.view.document, word.copy, this.#d.view.vm.name.toLowerCase()];
    if (document === null || copy === undefined || this.#said.has(word.said) || !this.#d.view.vm.nameKnown) return null;
    const scheduled = (id: string) => document.events.find((e) => e.eventId === id && e.eventStatus === 'Scheduled');
    const own = copy.due.flatMap((d) => (d.vm.toLowerCase() === me ? [scheduled(d.eventId)] : [])).find((e) => e !== undefined);
    if (own === undefined) return null;
    this.#repeated = word;
    return this.#say(own, document.incarnation, word, [], 0);
  }

  /** foretell reads the members' records (and the slots, which say when a member's maintenance ends); it returns the CloudEvent it committed, or null. */
  async foretell(members: readonly MemberRecord[], slots: readonly SlotRecord[] = []): Promise<BridgeEvent | null> {
    const d = this.#d;
    const document = d.view.document;
    if (document === null || !d.view.vm.nameKnown) return null;
    const me = d.view.vm.name.toLowerCase();
    // a member is unavailable past its maintenance until it has settled; one not healthy now is unavailable already
    const now = this.#now();
    const windows = windowsOf(members, now, (d.settleSeconds ?? 0) * 1000);
    this.#k = slotsFor(d.maxUnavailable, Math.max(1, members.filter((m) => !staleAt(m, now)).length));
    const bounds = {
      unhealthyCountsForSeconds: d.unhealthyCountsForSeconds ?? UNHEALTHY_COUNTS_FOR_SECONDS,
      settleSeconds: d.settleSeconds ?? 0,
      marginSeconds: d.marginSeconds ?? MARGIN_SECONDS,
    };
    this.#unhealthy = unavailableOf(members, slots, '', now, bounds).filter((u) => u.counts && !windows.some((w) => w.vm === u.vm));
    const c = collisionWith(windows, Math.max(0, this.#k - this.#unhealthy.length), (w) => w.vm.toLowerCase() === me);
    let due: readonly Window[];
    if (c !== null && c.windows.some((w) => w.vm.toLowerCase() === me)) {
      const k = (this.#known ??= { eventIds: new Set(), vms: new Set(), from: c.from, to: c.to, seen: now, peak: c.windows });
      for (const w of c.windows) {
        k.eventIds.add(w.eventId);
        k.vms.add(w.vm.toLowerCase());
      }
      if (c.windows.length >= k.peak.length) k.peak = c.windows;
      [k.from, k.to] = [Math.min(k.from, c.from), Math.max(k.to, c.to)];
      due = c.windows;
    } else {
      // the wave this member is due in: as members complete, how many of it are still due
      const known = this.#known;
      due = known === undefined ? [] : windows.filter((w) => known.eventIds.has(w.eventId));
    }
    const ownWindow = due.find((w) => w.vm.toLowerCase() === me);
    const own = ownWindow === undefined ? undefined : document.events.find((e) => e.eventId === ownWindow.eventId);
    // its maintenance started with the wave still past the budget: handed on to the member still due that the queue serves last
    // (again, from the member it named before, should that one be due no more: the notice is handed on)
    const gone = this.#hint !== undefined && this.#hint.speaker !== me && !due.some((w) => w.vm.toLowerCase() === this.#hint?.speaker);
    if (own === undefined && this.#seen !== undefined && due.length + this.#unhealthy.length > this.#k)
      this.#seen = seenOf(this.#seen.wave, due, this.#seen, speakerOf(due), gone) ?? this.#seen;
    const resolved = own === undefined ? this.#leaving(members, due, now) : null;
    if (resolved !== null) return resolved;
    if (this.#known === undefined || own === undefined) {
      // out of the wave (its maintenance started, or the collision is gone): its last word stays in its record until the wave
      // is past, and a speaker whose maintenance started keeps the wave until it has said it within the budget
      const speaking = this.#word !== undefined && this.#word.kind !== 'resolved' && this.#own !== undefined && due.length > 0;
      if (!speaking) [this.#known, this.#own, this.#repeated, this.#seen] = [undefined, undefined, undefined, undefined];
      return this.#known === undefined ? this.#resolveNamed(windows, now, members) : null;
    }
    this.#own = own;
    const known = this.#known;
    const over = due.length + this.#unhealthy.length > this.#k;
    const words = wordsAbout(members, known, now);
    // its own last word, and the last it repeated (a speaker gone from the wave, its record no longer heard, spoke before it)
    // the notice's word first (a record's own copy of it sorts after it), none said further ahead than any clock runs
    const mine = [this.#hint?.word, this.#word, this.#repeated].filter(
      (w): w is WaveWord =>
        w !== undefined && Date.parse(w.to) > known.from && Date.parse(w.from) < known.to && Date.parse(w.at) <= now + CLOCK_SKEW_MS,
    );
    const heard = [...mine, ...words].sort((a, b) => Date.parse(a.at) - Date.parse(b.at) || a.said.localeCompare(b.said));
    const last = heard.at(-1);
    // the speaker its notice names while it is due (the wave keeps one speaker as the queue moves), else the one served last
    const hinted = this.#hint?.speaker;
    const speaker = hinted !== undefined && due.some((w) => w.vm.toLowerCase() === hinted) ? hinted : speakerOf(due);
    this.#speaker = speaker === me;
    const first = heard[0]?.wave ?? this.#hint?.wave;
    // the wave's id: the one its first word said (whoever said it), or its notice gave it, else a new one
    const wave = first ?? waveIdOf(d.group, idsOf(due));
    // the speaker the notice names is due in no wave of the group's any more: the notice is handed on to this one's
    this.#seen = seenOf(wave, due, known, speaker, hinted !== undefined && !windows.some((w) => w.vm.toLowerCase() === hinted));
    if (speaker !== me) {
      // another member speaks: this one repeats the speaker's latest word (no other member's), under its id, as it sees the wave now
      const spoken = wordsAbout(members, known, now, speaker).at(-1);
      if (spoken === undefined || this.#said.has(spoken.said)) return null;
      this.#repeated = spoken;
      return this.#say(own, document.incarnation, spoken, due, members.length);
    }
    // a speaker taking the wave over goes on from its last word, as its own (so it says the wave resolved as it leaves)
    if (this.#word === undefined && last !== undefined) this.#word = last;
    const kind = nextWord(last, over, due, known, now, servedOf(members, known));
    this.#speakAt = kind === null && last === undefined && over ? known.seen + SETTLE_MS : null;
    if (kind === null) return null;
    // a wave the queue brought within the budget before it was said: said as it was seen at its largest
    if (kind === 'foreseen' && !over) due = known.peak;
    const word: WaveWord = {
      wave,
      said: collisionIdOf(wave, idsOf(due), kind === 'resolved'),
      kind,
      at: new Date(now).toISOString(),
      from: new Date(known.from).toISOString(),
      to: new Date(known.to).toISOString(),
      due: due.length,
    };
    return this.#speak(own, document.incarnation, word, due, members.length);
  }

  /**
   * leaving: the speaker's own maintenance has started. The queue serves the speaker last, so the
   * wave is within the budget now: said so, once, before it leaves the wave, as soon as the members
   * its records still show due are within the budget (the members that read the group only at
   * their turn never take the wave over from it).
   */
  #leaving(members: readonly MemberRecord[], due: readonly Window[], now: number): BridgeEvent | null {
    const [known, word, own, document] = [this.#known, this.#word, this.#own, this.#d.view.document!];
    if (known === undefined || own === undefined) return null;
    if (word === undefined) return this.#leavingUnsaid(members, known, own, now);
    // the members still due are within the budget (the queue served them first; their records catch up): said now, once
    if (word.kind === 'resolved' || due.length + this.#unhealthy.length > this.#k) return null;
    // handed on to a member still due: that one says it
    const [me, named] = [this.#d.view.vm.name.toLowerCase(), this.#hint?.speaker];
    if (due.some((w) => w.vm.toLowerCase() === named) || wordsAbout(members, known, now).some((w) => w.kind === 'resolved')) return null;
    // said in the notice as its speaker again (handed on to a member due no more, that never took the wave over)
    const self = selfOf(members, me);
    if (this.#seen !== undefined && self !== undefined) this.#seen = { ...this.#seen, speaker: { member: self, vm: this.#d.view.vm.name } };
    const ids = due.length > 0 ? due.map((w) => w.eventId) : [own.eventId];
    const said: WaveWord = {
      ...word,
      said: collisionIdOf(word.wave, ids, true),
      kind: 'resolved',
      at: new Date(now).toISOString(),
      due: due.length,
    };
    return this.#speak(own, document.incarnation, said, due, members.length);
  }

  /**
   * leavingUnsaid: the speaker's own maintenance started before it said its wave (the queue served
   * a short wave faster than the speaker saw it settle): said now, as seen at its largest, when it
   * was past the budget and nobody said it; resolved at its next read.
   */
  #leavingUnsaid(members: readonly MemberRecord[], known: Known, own: ScheduledEvent, now: number): BridgeEvent | null {
    const unsaid = this.#speaker && this.#repeated === undefined && wordsAbout(members, known, now).length === 0;
    if (!unsaid || known.peak.length + this.#unhealthy.length <= this.#k) return null;
    const ids = known.peak.map((w) => w.eventId);
    const wave = this.#seen?.wave ?? this.#hint?.wave ?? waveIdOf(this.#d.group, ids);
    const word: WaveWord = {
      ...{ wave, said: collisionIdOf(wave, ids), kind: 'foreseen', at: new Date(now).toISOString() },
      ...{ from: new Date(known.from).toISOString(), to: new Date(known.to).toISOString(), due: ids.length },
    };
    return this.#speak(own, this.#d.view.document!.incarnation, word, known.peak, members.length);
  }

  /** resolveNamed: the wave handed to this member as its notice's speaker, said resolved, or handed on (wave-handed.ts). */
  #resolveNamed(windows: readonly Window[], now: number, members: readonly MemberRecord[]): BridgeEvent | null {
    const [document, vm, room, lastOwn] = [this.#d.view.document!, this.#d.view.vm.name, this.#k - this.#unhealthy.length, this.#lastOwn];
    const said = this.#word?.kind === 'resolved' ? this.#word : undefined;
    const [heard, self] = [(id: string) => this.#said.has(id), selfOf(members, vm)];
    const r = handedWave(this.#hint, windows, { vm, self, room, events: document.events, lastOwn, said, heard, now });
    this.#seen = r === null ? this.#seen : r.seen;
    return r?.word === undefined ? null : this.#speak(r.own, document.incarnation, r.word, r.due, members.length);
  }

  /** speak: a word this member says as the wave's speaker, kept for its record with what every copy says, and committed. */
  #speak(own: ScheduledEvent, incarnation: number, word: WaveWord, due: readonly Window[], members: number): BridgeEvent | null {
    const { copy: _, ...bare } = word;
    this.#word = { ...bare, copy: copyOf(infoOf(this.#d.group, this.#k, this.#unhealthy, bare, due, members)) };
    return this.#say(own, incarnation, this.#word, due, members);
  }

  /** say commits a word about `own`: what it says of the wave is its speaker's copy when it carries one, else this member's view. */
  #say(own: ScheduledEvent, incarnation: number, word: WaveWord, due: readonly Window[], members: number): BridgeEvent | null {
    if (this.#said.size > 10_000) this.#said.clear();
    this.#said.add(word.said);
    this.#lastOwn = own;
    const info =
      word.copy === undefined
        ? infoOf(this.#d.group, this.#k, this.#unhealthy, word, due, members)
        : infoOfCopy(this.#d.group, { ...word, copy: word.copy });
    return commitCollision(this.#d, own, incarnation, word.said, info, this.#now());
  }
}
