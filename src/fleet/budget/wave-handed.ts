/**
 * A wave handed to a member: the speaker its notice names (wave-board.ts) that did not see the
 * wave past the budget itself, at a read of the group. It was handed the wave as the last speaker
 * left it, and its own maintenance may be under way or over already. Once the members due in the
 * wave's span are within the budget it says the wave resolved, once, about its own event in the
 * wave (or the last it said a word about); while more are due at once than it allows, it hands the
 * wave on to the member of those that the queue serves last.
 */
import { affects } from '../../imds/identity.ts';
import { isDrill } from '../../imds/drill-id.ts';
import type { ScheduledEvent } from '../../imds/wire.ts';
import { collisionIdOf } from '../../pipeline/notices.ts';
import { collisionOf, type Window } from './windows.ts';
import { seenOf, speakerOf, type SeenWave, type WaveHint, type WaveWord } from './waves.ts';

/** idsOf: the EventIds of these windows. */
export const idsOf = (windows: readonly Window[]): string[] => windows.map((w) => w.eventId);

/** selfOf: the member key of the record of this VM (`vm`, any case), if the group's records hold it. */
export const selfOf = (members: readonly { readonly vm: string; readonly member: string }[], vm: string): string | undefined =>
  members.find((m) => m.vm.toLowerCase() === vm.toLowerCase())?.member;

export interface HandedTo {
  /** This member's VM name. */
  readonly vm: string;
  /** This member's key, as its record in the group says it (the speaker a notice it takes over names). */
  readonly self: string | undefined;
  /** The slots the wave has: the group's, less the members not healthy outside it. */
  readonly room: number;
  /** This member's events as IMDS lists them now. */
  readonly events: readonly ScheduledEvent[];
  /** The event of this member's that it said or repeated a word about last. */
  readonly lastOwn: ScheduledEvent | undefined;
  /** The resolved word this member said last, if its last word was one. */
  readonly said: WaveWord | undefined;
  /** Whether this member said or repeated the word `id` (a word it read in the record that holds it). */
  readonly heard: (id: string) => boolean;
  readonly now: number;
}

/** What the member does: says `word` about `own` (with the members due), or hands the wave on (`seen`); null: neither. */
export type Handed =
  | { readonly word: WaveWord; readonly own: ScheduledEvent; readonly due: readonly Window[]; readonly seen: SeenWave }
  | { readonly word?: undefined; readonly seen: SeenWave | undefined };

export function handedWave(h: WaveHint | undefined, windows: readonly Window[], m: HandedTo): Handed | null {
  const vm = m.vm.toLowerCase();
  // a silent notice whose speaker is due in no wave any more: taken over by a member that repeated its word (in its own name)
  const taken = h?.silent === true && h.speaker !== vm && m.self !== undefined && !windows.some((w) => w.vm.toLowerCase() === h.speaker);
  // a wave whose word this member never heard from the record that holds it is none of its own: a notice alone says nothing
  if ((h?.speaker !== vm && !taken) || h?.word === undefined || h.word.kind === 'resolved' || !m.heard(h.word.said)) return null;
  const member = taken ? m.self : h.member;
  const span = { from: Date.parse(h.word.from), to: Date.parse(h.word.to) };
  const due = windows.filter((w) => w.from < span.to && w.to > span.from);
  // more due at once than the budget allows: handed on to the member the queue serves last of those (itself: nothing to do yet)
  const c = collisionOf(due, m.room);
  if (c !== null) {
    const next = speakerOf(c.windows);
    return { seen: next === vm ? undefined : seenOf(h.wave, c.windows, span, next) };
  }
  const inSpan = (e: ScheduledEvent) => e.eventStatus !== 'Scheduled' || (!!e.notBefore && Date.parse(e.notBefore) < span.to);
  const own = m.events.find((e) => affects(e.resources, m.vm) && !isDrill(e.eventId) && inSpan(e)) ?? m.lastOwn;
  if (own === undefined) return null;
  const ids = idsOf(due);
  const at = new Date(m.now).toISOString();
  const word: WaveWord = { ...h.word, said: collisionIdOf(h.wave, ids, true), kind: 'resolved', at, due: ids.length };
  const seen = { wave: h.wave, speaker: { member, vm: m.vm }, ...span };
  // said resolved already (its notice not written yet, or the members due changed since): the notice is written again, nothing said
  return m.said?.wave === h.wave ? { seen } : { word, own, due, seen };
}
