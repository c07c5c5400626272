/**
 * PauseNotice says a group's pause where the bridge says everything: a `fleet.paused` CloudEvent,
 * routed like any change (chat updates its message of the maintenance in place). A member says it
 * when the pause holds one of its own maintenances (a Scheduled event it would approve early), once
 * per pause, and says `resumed` once it is gone (resumed, or past its `until`). Every member says
 * one pause under one CloudEvent id, so a consumer deduplicates the group's copies.
 */
import type { Logger } from 'pino';
import type { BridgeView } from '../../imds/view.ts';
import type { EventsDocument, ScheduledEvent } from '../../imds/wire.ts';
import type { BridgeEvent } from '../../pipeline/cloudevent.ts';
import type { PauseInfo } from '../../pipeline/info.ts';
import { toPauseCloudEvent } from '../../pipeline/notices.ts';
import type { Journal, PendingEvent } from '../../store/store.ts';
import { mineOf } from './member.ts';
import { pauseText, type PauseState } from './pause.ts';

export interface PauseNoticeDeps {
  readonly group: string;
  readonly view: BridgeView;
  readonly journal: Journal;
  readonly logger: Logger;
  readonly route: (event: BridgeEvent) => PendingEvent;
  /** Called after the CloudEvent was committed. */
  readonly committed: (event: BridgeEvent) => void;
  readonly now?: () => number;
}

export class PauseNotice {
  readonly #d: PauseNoticeDeps;
  readonly #now: () => number;
  /** The pause this member said, while it holds. */
  #said: PauseState | null = null;

  constructor(deps: PauseNoticeDeps) {
    this.#d = deps;
    this.#now = deps.now ?? Date.now;
  }

  /** look: at each IMDS read, with the pause in force as the last listing of the slots said it. */
  look(pause: PauseState | null, document: EventsDocument): void {
    const own = mineOf(document, this.#d.view.vm).find((e) => e.eventStatus === 'Scheduled');
    if (pause !== null) {
      if (this.#said !== null && this.#said.since === pause.since && this.#said.by === pause.by) return;
      if (own === undefined) return;
      this.#commit(own, document.incarnation, pause, 'paused');
      this.#said = pause;
      return;
    }
    if (this.#said === null) return;
    const was = this.#said;
    this.#said = null;
    // its maintenance is over meanwhile: nothing of this member's was held, nothing to say
    if (own !== undefined) this.#commit(own, document.incarnation, was, 'resumed');
  }

  #commit(own: ScheduledEvent, incarnation: number, p: PauseState, state: PauseInfo['state']): void {
    const d = this.#d;
    const info: PauseInfo = {
      ...{ group: d.group, state, by: p.by, who: p.who, why: p.why, since: p.since, until: p.until ?? null },
      ...(p.members === undefined ? {} : { members: p.members }),
    };
    const ce = toPauseCloudEvent(own, incarnation, info, { vm: d.view.vm, observedAt: new Date(this.#now()).toISOString() });
    if (d.journal.knowsCloudEvent(ce.id)) return;
    d.journal.appendEvents([d.route(ce)]);
    if (state === 'paused')
      d.logger.warn(
        { code: 'FLEET_PAUSED', group: d.group, eventId: own.eventId, ceId: ce.id, by: p.by, who: p.who, until: p.until ?? null },
        `fleet budget: ${pauseText(d.group, p)}`,
      );
    else d.logger.info({ group: d.group, eventId: own.eventId, ceId: ce.id }, `fleet budget: group ${d.group} resumed`);
    d.committed(ce);
  }
}
