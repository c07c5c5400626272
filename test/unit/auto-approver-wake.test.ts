/**
 * AutoApprover.askAgain (src/daemon/auto-approver.ts), told by the fleet budget's watch of its
 * slots that one was given back: a wake that comes while the member's approval is under way (it
 * read the slots before the slot was given back, and ends HELD) must not be lost: the approval
 * is asked again once that one ends, with no IMDS read to wait for.
 */
import { expect, it } from 'vitest';
import { AutoApprover } from '../../src/daemon/auto-approver.ts';
import { ApprovalError, type ApprovalService } from '../../src/approval/service.ts';
import type { Approvals } from '../../src/store/store.ts';
import type { Preparations } from '../../src/daemon/preparations.ts';
import type { BridgeView } from '../../src/imds/view.ts';
import type { ScheduledEvent } from '../../src/imds/wire.ts';
import { memberVm } from '../../testkit/fleet-stores.ts';
import { silentLogger, waitFor } from '../helpers.ts';

it('a wake while an approval is under way: asked again once it ends held', async () => {
  const event: ScheduledEvent = {
    eventId: 'E1',
    eventType: 'Reboot',
    resourceType: 'VirtualMachine',
    resources: ['a'],
    eventStatus: 'Scheduled',
    notBefore: new Date(Date.now() + 600_000).toISOString(),
    description: '',
    eventSource: 'Platform',
    durationInSeconds: -1,
    raw: {},
  };
  const asks: { reject: (e: unknown) => void }[] = [];
  const approvals = {
    approve: () => new Promise((_resolve, reject) => void asks.push({ reject })),
  } as unknown as ApprovalService;
  const view = { vm: memberVm('a'), document: { incarnation: 1, events: [event] } } as unknown as BridgeView;
  const auto = new AutoApprover({
    records: { of: () => null } as unknown as Approvals,
    approvals,
    logger: silentLogger,
    rules: [{ match: {}, action: 'approve' }] as never,
    preparations: { ready: () => true } as unknown as Preparations,
    view,
    signal: new AbortController().signal,
    heldRetryMs: 300_000,
  });
  const held = () => new ApprovalError('HELD', 'no slot free', undefined, [], [], 0);
  // an IMDS read: asked, held
  auto.apply([event]);
  await waitFor(() => asks.length === 1, 'the first ask');
  asks[0]!.reject(held());
  await new Promise((r) => setImmediate(r));
  // the next read asks again; while that one is under way, a slot is given back: the watch wakes the member
  auto.apply([event]);
  await waitFor(() => asks.length === 2, 'the ask at the next read');
  auto.askAgain();
  // the ask under way had read the slots before: it ends held
  asks[1]!.reject(held());
  // no IMDS read comes (IMDS refuses them): the wake alone must bring the next ask
  await waitFor(() => asks.length === 3, 'the ask the wake brought', 2000, 20).catch(() => undefined);
  expect(asks).toHaveLength(3);
});
