/**
 * Living beside AKS: its node auto-drain and node-problem-detector may act on the same
 * Scheduled Events. Their marks: the taint `remediator.kubernetes.azure.com/unschedulable` (AKS
 * cordoned the node: it drains it), and the Node conditions `VMEventScheduled` and
 * `PreemptionScheduled` (a coming Spot eviction; `PreemptScheduled` is the Kubernetes Event's
 * reason, also accepted). AKS's node auto-drain cordons and drains for Redeploy and Preempt by
 * default (Freeze and Terminate only when opted in, Reboot never), and a `PreemptionScheduled`
 * raised for the Spot rebalance advisory announces no drain at all. So this bridge defers, evicting
 * nothing itself (never twice), only when AKS will drain: its taint is on the node, or a condition
 * names an event AKS drains for; it never waits for a drain that is not coming, and stops waiting
 * when AKS's marks go. It never undoes a cordon AKS holds; what it changed of its own (its taint,
 * label, annotation) it still gives back.
 * https://learn.microsoft.com/azure/aks/node-auto-drain, https://learn.microsoft.com/azure/aks/node-problem-detector
 */
import { sleep } from '../../src/kit.ts';
import type { Kube, KubeNode, NodeCondition } from './api.ts';
import { evictable } from './drain.ts';

export const AKS_TAINT = 'remediator.kubernetes.azure.com/unschedulable';
/** The conditions AKS's node-problem-detector sets for a scheduled event (and the older name of the Spot one). */
const AKS_CONDITIONS = ['VMEventScheduled', 'PreemptionScheduled', 'PreemptScheduled'];
/** What AKS's node auto-drain cordons and drains for by default. */
const AKS_DRAINS = ['Redeploy', 'Preempt'];
/** A condition raised for an advisory (the Spot rebalance recommendation): no drain follows it. */
const ADVISORY = /advisory|rebalanc/i;
const EVENT_TYPE = /\b(Freeze|Reboot|Redeploy|Preempt|Terminate)\b/;

/** aksCondition: the condition of AKS's node-problem-detector for a scheduled event, when one holds. */
export function aksCondition(node: KubeNode): NodeCondition | null {
  return node.conditions.find((c) => AKS_CONDITIONS.includes(c.type)) ?? null;
}

/**
 * aksActs: AKS will drain this Node for the event: its taint is on it, or its condition names (or
 * the event is, when known) a type AKS drains for, and not an advisory. With neither type known,
 * a condition that is not an advisory is taken to mean AKS acts.
 */
export function aksActs(node: KubeNode, eventType: string | null = null): boolean {
  if (node.taints.some((t) => t.key === AKS_TAINT)) return true;
  const c = aksCondition(node);
  if (c === null || ADVISORY.test(`${c.reason} ${c.message}`)) return false;
  const type = eventType ?? EVENT_TYPE.exec(`${c.reason} ${c.message}`)?.[1] ?? (c.type === 'VMEventScheduled' ? null : 'Preempt');
  return type === null || AKS_DRAINS.includes(type);
}

/** aksHoldsCordon: AKS's own taint is on the Node, so its cordon is AKS's to lift. */
export function aksHoldsCordon(node: KubeNode): boolean {
  return node.taints.some((t) => t.key === AKS_TAINT);
}

/**
 * waitEmpty waits until no pod a drain would evict is left on the Node: `empty`; `deadline` when
 * it is not by then; `left` when AKS's marks go while it waits (no drain is coming: the bridge
 * drains itself).
 */
export async function waitEmpty(
  kube: Kube,
  node: string,
  o: { deadline: number; pollMs: number; signal: AbortSignal; eventType: string },
): Promise<'empty' | 'deadline' | 'left'> {
  for (;;) {
    if (evictable(await kube.podsOn(node)).length === 0) return 'empty';
    if (!aksActs(await kube.readNode(node), o.eventType)) return 'left';
    if (Date.now() >= o.deadline) return 'deadline';
    await sleep(Math.min(o.pollMs, Math.max(0, o.deadline - Date.now())), o.signal);
  }
}
