/**
 * What the group keeps of its collision waves, and who says them. There is no record of its own
 * that every member reads and races: the wave's speaker (the member due in it that the queue
 * serves last) writes each word it says (`wave` in its own member record), and every member reads it in
 * the listing of the members it makes anyway. A word names the wave's id, its CloudEvent id, what
 * it says (foreseen, updated, resolved), when, and the wave's time span; a member due in the
 * wave repeats the speaker's latest word under the same CloudEvent id, so every member's copy of
 * one word has one id, whoever wrote first. Should the speaker leave the wave first (its maintenance
 * started early), the next member so chosen speaks on from the last word.
 */
import { createHash } from 'node:crypto';
import { CLOCK_SKEW_MS, type MemberRecord } from './records.ts';
import type { WaveWord, WordKind } from './schemas.ts';
import { collisionIdOf } from '../../pipeline/notices.ts';
import type { Window } from './windows.ts';

export type { WaveWord, WordKind } from './schemas.ts';

/** How long after a wave's last window its words are kept (a late completion still finds the wave). */
export const KEEP_MS = 3_600_000;

/** How often the members due may change before the speaker says so again: at most once a minute, the latest set. */
export const UPDATE_EVERY_MS = 60_000;

/** How often the speaker of a wave not yet within the budget reads the group: a quarter of a minute. */
export const SPEAKER_READ_MS = 15_000;

/**
 * How long the speaker sees a new collision before it says it: the members of one wave see their
 * events within a read or two of each other, so the wave is said once whole, not as each is seen.
 */
export const SETTLE_MS = 4000;

/** waveIdOf: the id a new wave takes: a digest of the group and the EventIds it was first said with. */
export function waveIdOf(group: string, eventIds: readonly string[]): string {
  return createHash('sha256')
    .update(`${group}\n${[...eventIds].sort().join('\n')}`)
    .digest('hex')
    .slice(0, 40);
}

/**
 * wordsAbout: the words the records of the wave's own members say of it (a member that has none of
 * its EventIds is not heard, whatever its record says), any whose span overlaps `from`..`to`, not
 * yet past KEEP_MS after its end, and said no later than CLOCK_SKEW_MS ahead of `now`, first said
 * first; with `speaker` (a VM name, lower-cased), only that member's.
 */
export function wordsAbout(
  members: readonly MemberRecord[],
  wave: { readonly from: number; readonly to: number; readonly eventIds: ReadonlySet<string>; readonly vms?: ReadonlySet<string> },
  now: number,
  speaker?: string,
): WaveWord[] {
  const { from, to } = wave;
  // a member of the wave: its record lists one of the wave's events, or this member saw it due in the wave (a speaker
  // served early, its maintenance over, is still heard)
  const inWave = (m: MemberRecord) => m.events.some((e) => wave.eventIds.has(e.eventId)) || wave.vms?.has(m.vm.toLowerCase()) === true;
  return (
    members
      .filter((m) => inWave(m) && (speaker === undefined || m.vm.toLowerCase() === speaker))
      .flatMap((m) => (m.wave === undefined ? [] : [m.wave]))
      // a word said further ahead of this member's clock than any member's clock runs is no word (it would silence the wave)
      .filter(
        (w) =>
          Date.parse(w.from) < to && Date.parse(w.to) > from && Date.parse(w.to) + KEEP_MS > now && Date.parse(w.at) <= now + CLOCK_SKEW_MS,
      )
      .sort((a, b) => Date.parse(a.at) - Date.parse(b.at) || a.said.localeCompare(b.said))
  );
}

/**
 * speakerOf: of the members due, the one the group's queue serves last (queue.ts: the earliest
 * NotBefore first, then the one held first, then by VM name; a member not held yet asks after
 * those held): the latest NotBefore, then not held, or held last, then the VM name that sorts
 * last, lower-cased. It stays in the wave the longest, so the wave rarely changes speakers, and it
 * is still due when the wave comes within the budget.
 */
export const speakerOf = (
  due: readonly { readonly vm: string; readonly from: number; readonly heldSince?: number }[],
): string | undefined =>
  due
    .map((w) => ({ vm: w.vm.toLowerCase(), from: w.from, since: w.heldSince ?? Infinity }))
    .sort((a, b) => b.from - a.from || later(a.since, b.since) || (a.vm < b.vm ? 1 : a.vm > b.vm ? -1 : 0))[0]?.vm;

/** later: the later of two times first (Infinity, not held, latest of all). */
const later = (a: number, b: number): number => (a === b ? 0 : a > b ? -1 : 1);

/** The wave this member is due in as it last read the group: its id (once said, or as its notice names it), the member that speaks for it, its span. */
export interface SeenWave {
  readonly wave: string;
  readonly speaker: { readonly member: string; readonly vm: string };
  readonly from: number;
  readonly to: number;
  /** The speaker its notice named is due in the wave no more (this member read the group): the notice is handed on to this one. */
  readonly handed?: boolean;
}

/**
 * What a wave's notice tells the forecast (wave-board.ts): the wave's id, the VM that speaks for it
 * (lower-cased), and its latest word as the notice names it (none of a copy's detail).
 */
export interface WaveHint {
  readonly wave: string;
  /**
   * The notice was not renewed for three heartbeats (its speaker neither speaks nor hands it on: its bridge restarted, or it
   * handed the wave to a member that never took it), and this member repeated its word: the wave is its to take over.
   */
  readonly silent?: boolean;
  /** The speaker's VM name, lower-cased. */
  readonly speaker: string;
  /** The speaker's member key. */
  readonly member: string;
  readonly word?: WaveWord;
}

/** seenOf: the wave as a member that read the group sees it: its id, its speaker (a VM name, lower-cased, with its member key), its span. */
export function seenOf(
  wave: string,
  due: readonly Window[],
  span: { readonly from: number; readonly to: number },
  speaker: string | undefined,
  handed = false,
): SeenWave | undefined {
  const w = due.find((x) => x.vm.toLowerCase() === speaker);
  const seen = w?.member === undefined ? undefined : { wave, speaker: { member: w.member, vm: w.vm }, from: span.from, to: span.to };
  return seen && handed ? { ...seen, handed } : seen;
}

/** servedOf: whether the queue has served the wave already: a member's record shows one of its events no longer Scheduled. */
export const servedOf = (members: readonly MemberRecord[], known: { readonly eventIds: ReadonlySet<string> }): boolean =>
  members.some((m) => m.events.some((e) => known.eventIds.has(e.eventId) && e.status !== 'Scheduled'));

/** The wave this member is due in, as it knows it. */
export interface Known {
  readonly eventIds: Set<string>;
  /** The VMs it saw due in it (lower-cased). */
  readonly vms: Set<string>;
  from: number;
  to: number;
  /** When this member first saw it collide. */
  readonly seen: number;
  /** The most members it saw due in it at once, past the budget: what a wave served before it was said is said with. */
  peak: readonly Window[];
}

/** nextWord: what the speaker says now, given the wave's last word: nothing, or which word. */
export function nextWord(
  last: WaveWord | undefined,
  over: boolean,
  due: readonly Window[],
  known: Known,
  now: number,
  served: boolean,
): WordKind | null {
  // said once whole, seen for SETTLE_MS; a short wave the queue served within the budget before that is said all the same
  if (last === undefined) return (over && now - known.seen >= SETTLE_MS) || (!over && served) ? 'foreseen' : null;
  if (!over) return last.kind === 'resolved' ? null : 'resolved';
  // the members due changed (or the wave grew past the budget again): the latest set, at most once a minute
  const same = collisionIdOf(
    last.wave,
    due.map((w) => w.eventId),
  );
  if (last.kind !== 'resolved' && last.said === same) return null;
  return now - Date.parse(last.at) >= UPDATE_EVERY_MS ? 'updated' : null;
}
