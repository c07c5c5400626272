/**
 * A wave handed to a member: the speaker its notice names (wave-board.ts) that did not see the
 * wave past the budget itself, at a read of the group. It was handed the wave as the last speaker
 * left it, and its own maintenance may be under way or over already. Once the members due in the
 * wave's span are within the budget it says the wave resolved, once, about its own event in the
 * wave (or the last it said a word about); while they are not, and it is due no more, it hands the
 * wave on to the member due that the queue serves last.
 */
import { affects } from '../../imds/identity.ts';
import { isDrill } from '../../imds/drill-id.ts';
import type { ScheduledEvent } from '../../imds/wire.ts';
import { collisionIdOf } from '../../pipeline/notices.ts';
import type { Window } from './windows.ts';
import { seenOf, speakerOf, type SeenWave, type WaveHint, type WaveWord } from './waves.ts';

export interface HandedTo {
  /** This member's VM name. */
  readonly vm: string;
  /** The slots the wave has: the group's, less the members not healthy outside it. */
  readonly room: number;
  /** This member's events as IMDS lists them now. */
  readonly events: readonly ScheduledEvent[];
  /** The event of this member's that it said or repeated a word about last. */
  readonly lastOwn: ScheduledEvent | undefined;
  readonly now: number;
}

/** What the member does: says `word` about `own` (with the members due), or hands the wave on (`seen`); null: neither. */
export type Handed =
  | { readonly word: WaveWord; readonly own: ScheduledEvent; readonly due: readonly Window[]; readonly seen: SeenWave }
  | { readonly word?: undefined; readonly seen: SeenWave | undefined };

export function handedWave(h: WaveHint | undefined, windows: readonly Window[], m: HandedTo): Handed | null {
  const vm = m.vm.toLowerCase();
  if (h?.speaker !== vm || h.word === undefined || h.word.kind === 'resolved') return null;
  const span = { from: Date.parse(h.word.from), to: Date.parse(h.word.to) };
  const due = windows.filter((w) => w.from < span.to && w.to > span.from);
  if (due.length > m.room)
    return { seen: due.some((w) => w.vm.toLowerCase() === vm) ? undefined : seenOf(h.wave, due, span, speakerOf(due)) };
  const inSpan = (e: ScheduledEvent) => e.eventStatus !== 'Scheduled' || (!!e.notBefore && Date.parse(e.notBefore) < span.to);
  const own = m.events.find((e) => affects(e.resources, m.vm) && !isDrill(e.eventId) && inSpan(e)) ?? m.lastOwn;
  if (own === undefined) return null;
  const ids = due.map((w) => w.eventId);
  const at = new Date(m.now).toISOString();
  const word: WaveWord = { ...h.word, said: collisionIdOf(h.wave, ids, true), kind: 'resolved', at, due: ids.length };
  return { word, own, due, seen: { wave: h.wave, speaker: { member: h.member, vm: m.vm }, ...span } };
}
