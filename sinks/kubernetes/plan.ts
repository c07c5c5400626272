/**
 * rehearseDrain: what a preparation of this Node would do now, with nothing changed. First what
 * it would change on the Node (cordon, taint, label), then each pod on it: evicted (with the
 * grace it would get), skipped and why (DaemonSet, mirror, terminating), or what would block the
 * drain (no controller, an emptyDir volume, a disruption budget). The budgets are the API
 * server's own answer: each eviction is asked as a dry run (dryRun=All), which runs admission
 * and the disruption budget check and stores nothing.
 */
import type { Rehearsal, RehearsalOptions } from '../../src/api.ts';
import { table } from '../../src/kit.ts';
import type { Kube, KubePod } from './api.ts';
import { graceOf, HURRY_MS, pool, refusalOf, staysWhy, type DrainOptions } from './drain.ts';
import { aksActs } from './aks.ts';
import { ANNOTATION, EXCLUDE_LABEL, readPrepared, TAINT_KEY } from './record.ts';
import { findNode, nodeNameOf } from './locate.ts';

/** The keys of a kubernetes sink a rehearsal reads. */
export interface PlanConfig {
  readonly nodeName?: string | undefined;
  readonly taint: boolean;
  readonly excludeFromLoadBalancers: boolean;
  readonly drain: Pick<DrainOptions, 'gracePeriodSeconds' | 'deleteEmptyDirData' | 'force' | 'deadlineMarginSeconds' | 'onDeadline'>;
}

/** evict: evicted; delete: a budget holds it now, deleted past it near NotBefore (onDeadline: delete); skip: left; block: stops the drain. */
export type PodAction = 'evict' | 'delete' | 'skip' | 'block';

export interface PlannedPod {
  readonly pod: string;
  readonly action: PodAction;
  /** The grace it would get (seconds), when it would be evicted or deleted. */
  readonly grace: number | null;
  /** Its own terminationGracePeriodSeconds. */
  readonly ownGrace: number | null;
  readonly why: string | null;
}

/** Dry-run evictions asked at once. */
const CONCURRENCY = 8;

export async function rehearseDrain(config: PlanConfig, client: Kube, o: RehearsalOptions): Promise<Rehearsal> {
  const kube = client.scoped(o.signal);
  const node = await findNode(kube, nodeNameOf(config.nodeName), async () => (await o.vm())?.resourceId ?? null);
  const notBefore = o.noticeMs === null ? null : Date.now() + o.noticeMs;
  const pods = await kube.podsOn(node.name);
  const planned = await pool(pods, CONCURRENCY, (pod) => planPod(kube, pod, config, notBefore));
  const record = readPrepared(node.annotations[ANNOTATION]);
  const changes = {
    cordon: !node.unschedulable,
    taint: config.taint && !node.taints.some((t) => t.key === TAINT_KEY),
    label: config.excludeFromLoadBalancers && node.labels[EXCLUDE_LABEL] === undefined,
  };
  const aks = aksActs(node);
  const blocking = planned.filter((p) => p.action === 'block');
  const data = {
    node: node.name,
    notBefore: notBefore === null ? null : new Date(notBefore).toISOString(),
    changes,
    preparedFor: record === null ? null : record === 'unreadable' ? 'unreadable' : record.eventIds,
    aks,
    pods: planned,
    evicted: planned.filter((p) => p.action === 'evict' || p.action === 'delete').length,
    skipped: planned.filter((p) => p.action === 'skip').length,
    blocking: blocking.length,
  };
  const text = textOf(data, config, notBefore, blocking);
  // the verdict: the text's line after the table
  const summary = `node ${node.name}: ${text
    .split('\n')
    .find((l) => l.startsWith('The drain would'))!
    .replace(/^The drain/, 'the drain')}`;
  return { ready: blocking.length === 0, summary, text, data };
}

async function planPod(kube: Kube, pod: KubePod, c: PlanConfig, notBefore: number | null): Promise<PlannedPod> {
  const base = { pod: `${pod.namespace}/${pod.name}`, ownGrace: pod.gracePeriodSeconds };
  const skip = (why: string): PlannedPod => ({ ...base, action: 'skip', grace: null, why });
  const stays = staysWhy(pod);
  if (stays !== null) return skip(stays);
  if (pod.terminating) return skip('terminating already');
  const refusal = refusalOf(pod, c.drain);
  if (refusal !== null) return { ...base, action: 'block', grace: null, why: `${refusal.why}; ${refusal.key}: true evicts it` };
  const grace = graceOf(pod, { ...c.drain, notBefore });
  const r = await kube.evict(pod, grace, true);
  if (r === 'gone') return skip('gone already');
  if (r === 'evicted') return { ...base, action: 'evict', grace, why: graceWhy(pod, grace, c) };
  if (c.drain.onDeadline === 'delete')
    return {
      ...base,
      action: 'delete',
      grace,
      why: `its disruption budget holds it now (${r.budget}); if it still does ${c.drain.deadlineMarginSeconds + grace} s before NotBefore, deleted past it (drain.onDeadline: delete)`,
    };
  return { ...base, action: 'block', grace: null, why: `its disruption budget holds it: ${r.budget}` };
}

/** graceWhy: why a pod's grace is shorter than its own, or null. */
function graceWhy(pod: KubePod, grace: number, c: PlanConfig): string | null {
  const own = pod.gracePeriodSeconds;
  const wanted = Math.min(own ?? c.drain.gracePeriodSeconds, c.drain.gracePeriodSeconds);
  if (grace < wanted) return `ends ${c.drain.deadlineMarginSeconds} s before NotBefore (drain.deadlineMarginSeconds)`;
  if (own !== null && own > grace) return `its own is ${own} s; at most drain.gracePeriodSeconds`;
  return null;
}

function textOf(
  d: {
    node: string;
    changes: Record<'cordon' | 'taint' | 'label', boolean>;
    aks: boolean;
    pods: PlannedPod[];
    evicted: number;
    skipped: number;
  },
  c: PlanConfig,
  notBefore: number | null,
  blocking: readonly PlannedPod[],
): string {
  const steps = [
    d.changes.cordon ? 'cordon it' : 'leave its cordon (it is cordoned already)',
    ...(d.changes.taint ? [`add the taint ${TAINT_KEY}=<EventType>:NoSchedule`] : []),
    ...(d.changes.label ? [`add the label ${EXCLUDE_LABEL}=true`] : []),
  ];
  const lines = [`Node ${d.node}: a preparation now would ${steps.join(', ')}, then drain it.`];
  if (d.aks)
    lines.push(
      "AKS's node auto-drain acts on this node (its taint or condition): se-bridge would evict nothing and wait for AKS to empty it.",
    );
  if (notBefore !== null)
    lines.push(
      `With NotBefore at ${new Date(notBefore).toISOString()}: each grace ends ${c.drain.deadlineMarginSeconds} s before it` +
        (notBefore - Date.now() < HURRY_MS ? ', and every pod is evicted at once.' : '.'),
    );
  const rows = d.pods.map((p) => [p.action, p.pod, p.grace === null ? '-' : `${p.grace} s`, p.why ?? '']);
  lines.push('', rows.length === 0 ? 'No pod runs on the node.' : table(['ACTION', 'POD', 'GRACE', 'WHY'], rows), '');
  const counts = `${plural(d.evicted, 'pod')} would be evicted, ${d.skipped} skipped`;
  const named = blocking.slice(0, 3).map((p) => p.pod);
  lines.push(
    blocking.length === 0
      ? `The drain would empty the node: ${counts}.`
      : `The drain would be blocked by ${plural(blocking.length, 'pod')}: ${named.join(', ')}${blocking.length > 3 ? ` and ${blocking.length - 3} more` : ''} (${counts}).`,
  );
  if (d.evicted > 1)
    lines.push(
      'Each eviction was asked alone (dryRun=All): pods that share a budget each pass here, and in a drain leave as fast as it allows.',
    );
  return lines.join('\n');
}

export const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;
