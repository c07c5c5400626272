/**
 * Living beside AKS: its node auto-drain and node-problem-detector may act on the same
 * Scheduled Events. Their marks: the taint `remediator.kubernetes.azure.com/unschedulable` and
 * the Node conditions `VMEventScheduled` and `PreemptScheduled`. While they act, this bridge
 * evicts nothing itself (never twice), waits for the node to be empty, and never undoes a
 * cordon AKS holds; what it changed of its own (its taint, label, annotation) it still gives back.
 * https://learn.microsoft.com/azure/aks/node-auto-repair and AKS node auto-drain.
 */
import { sleep } from '../../src/kit.ts';
import type { Kube, KubeNode } from './api.ts';
import { evictable } from './drain.ts';

export const AKS_TAINT = 'remediator.kubernetes.azure.com/unschedulable';
const AKS_CONDITIONS = ['VMEventScheduled', 'PreemptScheduled'];

/** aksActs: AKS marks the Node as drained or being drained for a scheduled event. */
export function aksActs(node: KubeNode): boolean {
  return node.taints.some((t) => t.key === AKS_TAINT) || node.conditions.some((c) => AKS_CONDITIONS.includes(c));
}

/** aksHoldsCordon: AKS's own taint is on the Node, so its cordon is AKS's to lift. */
export function aksHoldsCordon(node: KubeNode): boolean {
  return node.taints.some((t) => t.key === AKS_TAINT);
}

/** waitEmpty waits until no pod a drain would evict is left on the Node: true, or false at the deadline. */
export async function waitEmpty(kube: Kube, node: string, o: { deadline: number; pollMs: number; signal: AbortSignal }): Promise<boolean> {
  for (;;) {
    if (evictable(await kube.podsOn(node)).length === 0) return true;
    if (Date.now() >= o.deadline) return false;
    await sleep(Math.min(o.pollMs, Math.max(0, o.deadline - Date.now())), o.signal);
  }
}
