/**
 * scenarioTimeline plays a simulator scenario on a clock of its own, at development timing,
 * and returns the CloudEvents the bridge would emit for it, in order: what a receiver would get,
 * without waiting for it. Each Scheduled event of this VM is approved just before it starts (as
 * a policy or a human would), so a scenario that runs its course gives scheduled, (updated,)
 * approved, started, completed; one Azure cancels gives scheduled, canceled.
 */
import { affects, type VmIdentity } from '../imds/identity.ts';
import { toDomainDocument, WireDocument, type EventsDocument } from '../imds/wire.ts';
import { toApprovedCloudEvent, toCloudEvent, type BridgeEvent } from '../pipeline/cloudevent.ts';
import { diff } from '../pipeline/diff.ts';
import { ImdsSimulator } from './server.ts';

/** One step of the clock: the bridge's default poll interval. */
const STEP_MS = 1000;
/** The longest scenario at development timing is a day ahead of its NotBefore (1440 s): well inside. */
const MAX_STEPS = 20_000;

export function scenarioTimeline(scenario: string, vm: VmIdentity, start = Date.parse('2026-01-15T09:00:00Z')): BridgeEvent[] {
  let clock = start;
  const sim = new ImdsSimulator({ vmName: vm.name, timing: 'dev', now: () => clock });
  sim.playScenario(scenario);
  const out: BridgeEvent[] = [];
  let previous: EventsDocument | null = null;
  for (let step = 0; step < MAX_STEPS; step++) {
    sim.tick();
    const document = toDomainDocument(WireDocument.parse(sim.document())).document;
    const ctx = { vm, observedAt: new Date(clock).toISOString() };
    for (const t of diff(previous, document)) {
      const was = previous?.events.find((e) => e.eventId === t.event.eventId);
      if (t.kind === 'started' && was?.eventStatus === 'Scheduled' && affects(was.resources, vm.name)) {
        const approval = { by: 'policy template-test', via: 'policy', at: ctx.observedAt };
        out.push(toApprovedCloudEvent(was, previous!.incarnation, approval, 'template-test', ctx));
      }
      out.push(toCloudEvent(t, ctx));
    }
    previous = document;
    if (step > 0 && document.events.length === 0) break;
    clock += STEP_MS;
  }
  return out;
}
