/**
 * drainNode evicts every pod of a cordoned Node through the Eviction API, as `kubectl drain`
 * does: DaemonSet pods and mirror (static) pods stay, PodDisruptionBudgets are honoured (a 429
 * is tried again with backoff until the deadline), each pod gets at most `gracePeriodSeconds`
 * (its own, if shorter, wins), and a pod with an emptyDir volume blocks the drain unless
 * `deleteEmptyDirData`. It returns once every evicted pod is gone, or says what still holds
 * the node when the deadline comes.
 */
import type { Logger } from 'pino';
import { sleep } from '../../lib/time.ts';
import type { Kube, KubePod } from './kube-api.ts';

export interface DrainOptions {
  readonly gracePeriodSeconds: number;
  readonly deleteEmptyDirData: boolean;
  /** How often evicted pods are checked for being gone. */
  readonly pollMs: number;
  /** Epoch ms after which the drain gives up. */
  readonly deadline: number;
  readonly signal: AbortSignal;
  readonly logger: Logger;
}

export type DrainResult = { readonly kind: 'drained'; readonly evicted: number } | { readonly kind: 'blocked'; readonly reason: string };

/** Pods evicted at once. */
const CONCURRENCY = 16;
/** The backoff of a pod a budget holds: from 500 ms, doubling, at most 5 s. */
const BUDGET_BACKOFF_MS = [500, 1000, 2000, 5000];
/** Pods can still land on a node whose cordon they raced: list again at most this often. */
const ROUNDS = 3;

const named = (p: KubePod) => `${p.namespace}/${p.name}`;

/** evictable: what a drain evicts (not DaemonSet pods, not mirror pods). */
export function evictable(pods: readonly KubePod[]): KubePod[] {
  return pods.filter((p) => !p.mirror && !p.ownerKinds.includes('DaemonSet'));
}

export async function drainNode(kube: Kube, node: string, o: DrainOptions): Promise<DrainResult> {
  let evicted = 0;
  for (let round = 0; round < ROUNDS; round += 1) {
    const pods = evictable(await kube.podsOn(node));
    if (pods.length === 0) return { kind: 'drained', evicted };
    if (!o.deleteEmptyDirData) {
      const local = pods.filter((p) => p.emptyDir && !p.terminating && !p.finished);
      if (local.length > 0) {
        return {
          kind: 'blocked',
          reason: `cannot delete pods with local storage (emptyDir): ${local.slice(0, 3).map(named).join(', ')}${local.length > 3 ? ` and ${local.length - 3} more` : ''}; set drain.deleteEmptyDirData: true to evict them`,
        };
      }
    }
    o.logger.info({ node, pods: pods.length, round: round + 1 }, 'draining the node');
    const results = await pool(pods, CONCURRENCY, (pod) => evictAndWait(kube, pod, o));
    const held = results.filter((r): r is string => typeof r === 'string');
    evicted += results.filter((r) => r === true).length;
    if (held.length > 0) return { kind: 'blocked', reason: `${held.slice(0, 3).join('; ')}${held.length > 3 ? `; and ${held.length - 3} more` : ''}` };
  }
  const left = evictable(await kube.podsOn(node));
  return left.length === 0 ? { kind: 'drained', evicted } : { kind: 'blocked', reason: `pods keep landing on the node: ${left.slice(0, 3).map(named).join(', ')}` };
}

/** evictAndWait evicts one pod and waits until it is gone: true when evicted, false when it was gone already, else why not. */
async function evictAndWait(kube: Kube, pod: KubePod, o: DrainOptions): Promise<boolean | string> {
  let tries = 0;
  let result: 'evicted' | 'gone' | 'terminating' = pod.terminating ? 'terminating' : 'evicted';
  while (!pod.terminating) {
    const grace = Math.min(pod.gracePeriodSeconds ?? o.gracePeriodSeconds, o.gracePeriodSeconds);
    const r = await kube.evict(pod, grace);
    tries += 1;
    if (r === 'gone') return false;
    if (r === 'evicted') {
      result = 'evicted';
      break;
    }
    const pause = BUDGET_BACKOFF_MS[Math.min(tries - 1, BUDGET_BACKOFF_MS.length - 1)]! * (0.5 + Math.random() / 2);
    if (Date.now() + pause > o.deadline) return `pod ${named(pod)} is held by a PodDisruptionBudget (429 on ${tries} eviction${tries === 1 ? '' : 's'})`;
    await sleep(pause, o.signal);
  }
  while (Date.now() < o.deadline) {
    const uid = await kube.podUid(pod.namespace, pod.name);
    // gone, or replaced by a new pod of the same name (a StatefulSet's) elsewhere
    if (uid === null || uid !== pod.uid) return result === 'evicted';
    await sleep(Math.min(o.pollMs, Math.max(0, o.deadline - Date.now())), o.signal);
  }
  return `pod ${named(pod)} was evicted but has not stopped yet`;
}

/** pool runs `work` over `items`, at most `n` at a time, and keeps the results in order. */
async function pool<T, R>(items: readonly T[], n: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const runners = Array.from({ length: Math.min(n, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await work(items[i]!);
    }
  });
  await Promise.all(runners);
  return out;
}
