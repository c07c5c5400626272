/** CloudEvents as a sink receives them, for the sink tests and the benchmarks. */
import { identityFrom } from '../src/imds/identity.ts';
import { toDomainDocument, WireDocument } from '../src/imds/wire.ts';
import { toCloudEvent, type BridgeEvent } from '../src/pipeline/cloudevent.ts';
import { diff } from '../src/pipeline/diff.ts';

const testVm = identityFrom({
  name: 'vm0',
  resourceId: '/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/vm0',
});

/** bridgeEvents: `n` CloudEvents for Reboot events EV-0… of vm0, as a sink receives them. */
export function bridgeEvents(n: number, status = 'Scheduled', descriptionLength = 10): BridgeEvent[] {
  const wire = WireDocument.parse({
    DocumentIncarnation: 2,
    Events: Array.from({ length: n }, (_, i) => ({
      EventId: `EV-${i}`,
      EventType: 'Reboot',
      EventStatus: status,
      Resources: ['vm0'],
      NotBefore: 'Mon, 11 Apr 2022 22:26:58 GMT',
      Description: 'd'.repeat(descriptionLength),
    })),
  });
  return diff(null, toDomainDocument(wire).document).map((t) => toCloudEvent(t, { vm: testVm, observedAt: '2022-04-11T22:11:58.000Z' }));
}
