/**
 * attachCalendar: the calendar as a feature of the daemon (daemon/feature.ts), when `calendar` is
 * configured. At every IMDS read it looks at each Scheduled event of this VM once per NotBefore,
 * duration and rule, and when the maintenance falls in a blackout, or outside every window with
 * none before it, commits one `calendar.conflict` CloudEvent, routed like any other change, and
 * says it with the code CALENDAR_CONFLICT. /readyz's details say whether early approval is open.
 */
import type { Logger } from 'pino';
import { decide, type Rule } from '../../approval/policy.ts';
import { isDrill } from '../../imds/drill-id.ts';
import { affects } from '../../imds/identity.ts';
import type { BridgeView } from '../../imds/view.ts';
import type { EventsDocument } from '../../imds/wire.ts';
import type { BridgeEvent } from '../../pipeline/cloudevent.ts';
import { toConflictCloudEvent } from '../../pipeline/notices.ts';
import type { Journal, PendingEvent } from '../../store/store.ts';
import { calendarNow, type Calendar } from '../calendar.ts';
import { conflictOf, conflictText } from '../conflict.ts';
import type { Deferrals } from './defer.ts';

export interface CalendarContext {
  readonly calendar: Calendar | undefined;
  readonly rules: readonly Rule[];
  readonly view: BridgeView;
  readonly journal: Journal;
  readonly logger: Logger;
  readonly route: (event: BridgeEvent) => PendingEvent;
  readonly committed: (events: readonly BridgeEvent[]) => void;
  readonly now?: () => number;
  /** The preparations deferred to a window, released here when it opens. */
  readonly deferrals?: Deferrals;
}

export function attachCalendar(ctx: CalendarContext) {
  const calendar = ctx.calendar;
  if (calendar === undefined) return null;
  const now = ctx.now ?? Date.now;
  /** Per EventId: what it was last looked at with (NotBefore, duration, rule). */
  const looked = new Map<string, string>();
  return {
    name: 'calendar',
    onRead(document: EventsDocument): void {
      const { view, rules } = ctx;
      if (!view.vm.nameKnown) return;
      const t = now();
      const listed = new Set(document.events.map((e) => e.eventId));
      for (const id of looked.keys()) if (!listed.has(id)) looked.delete(id);
      ctx.deferrals?.check(listed);
      for (const e of document.events) {
        if (e.eventStatus !== 'Scheduled' || e.notBefore === null || isDrill(e.eventId) || !affects(e.resources, view.vm.name)) continue;
        const d = decide(rules, e, view.vm.name, t);
        const within = (d.action === 'approve' || d.action === 'approveAfterHooks') && d.rule !== null ? rules[d.rule]!.within : null;
        const key = `${e.notBefore}|${e.durationInSeconds}|${within}`;
        if (looked.get(e.eventId) === key) continue;
        looked.set(e.eventId, key);
        const input = { eventId: e.eventId, notBefore: Date.parse(e.notBefore), durationSeconds: e.durationInSeconds, within };
        const conflict = conflictOf(calendar, input, t);
        if (conflict === null) continue;
        const ce = toConflictCloudEvent(e, document.incarnation, conflict, { vm: view.vm, observedAt: new Date(t).toISOString() });
        if (ctx.journal.knowsCloudEvent(ce.id)) continue;
        ctx.journal.appendEvents([ctx.route(ce)]);
        ctx.logger.warn({ code: 'CALENDAR_CONFLICT', eventId: e.eventId, ceId: ce.id, conflict }, `calendar: ${conflictText(conflict)}`);
        ctx.committed([ce]);
      }
    },
    details: () => calendarNow(calendar, now()),
  };
}
