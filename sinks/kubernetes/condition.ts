/**
 * The Node condition this bridge sets while a maintenance is pending, for controllers that act
 * on Node conditions (a descheduler, an autoscaler, a dashboard): on clusters where AKS's own
 * node-problem-detector does not set `VMEventScheduled` or `PreemptionScheduled`.
 *
 *   type: ScheduledMaintenance, status: True, reason: the EventType (Reboot, Redeploy, Freeze,
 *   Preempt, Terminate), message: the EventId and NotBefore.
 *
 * It is written to the Node's status subresource (`nodes/status` patch, a strategic merge keyed
 * by type) and removed when the maintenance is over. A failure to write it is said in the log and
 * stops nothing: the cordon and the drain are what prepare the node.
 */
import type { Logger } from 'pino';
import type { Kube, KubeNode } from './api.ts';

export const CONDITION_TYPE = 'ScheduledMaintenance';

/** setCondition: the condition on the Node, saying which maintenance; false when it could not be written. */
export async function setCondition(
  kube: Kube,
  node: KubeNode,
  event: { eventId: string; eventType: string; notBefore: string | null },
  logger: Logger,
): Promise<boolean> {
  const now = new Date().toISOString();
  const condition = {
    type: CONDITION_TYPE,
    status: 'True',
    reason: /^[A-Za-z][A-Za-z0-9]*$/.test(event.eventType) ? event.eventType : 'Maintenance',
    message: `Azure maintenance ${event.eventId} (${event.eventType}) not before ${event.notBefore ?? 'unknown'}; set by scheduled-events-bridge`,
    lastTransitionTime: now,
    lastHeartbeatTime: now,
  };
  return write(kube, node, { status: { conditions: [condition] } }, 'set', logger);
}

/** clearCondition removes the condition from the Node. */
export async function clearCondition(kube: Kube, node: KubeNode, logger: Logger): Promise<boolean> {
  return write(kube, node, { status: { conditions: [{ type: CONDITION_TYPE, $patch: 'delete' }] } }, 'remove', logger);
}

async function write(kube: Kube, node: KubeNode, patch: unknown, what: string, logger: Logger): Promise<boolean> {
  try {
    await kube.patchNodeStatus(node.name, patch);
    return true;
  } catch (err) {
    logger.warn({ node: node.name, condition: CONDITION_TYPE, err: (err as Error).message }, `could not ${what} the Node condition`);
    return false;
  }
}
