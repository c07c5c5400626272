/**
 * drainNode evicts every pod of a cordoned Node through the Eviction API, as `kubectl drain`
 * does: DaemonSet pods and mirror (static) pods stay, PodDisruptionBudgets are honoured (a 429
 * is tried again with backoff until the deadline), a pod with an emptyDir volume blocks the
 * drain unless `deleteEmptyDirData`, and a pod no controller manages blocks it unless `force`
 * (nothing would bring it back). Each pod's grace is the smallest of its own,
 * `gracePeriodSeconds`, and the time left until NotBefore less `deadlineMarginSeconds`, so every
 * pod can stop before the VM is taken; with little time left (a Spot eviction) every pod is
 * evicted at once. It returns once every evicted pod is gone from the node's pod list, or says
 * what still holds the node when the deadline comes.
 */
import type { Logger } from 'pino';
import { sleep } from '../../src/kit.ts';
import type { Kube, KubePod } from './api.ts';

export interface DrainOptions {
  readonly gracePeriodSeconds: number;
  readonly deleteEmptyDirData: boolean;
  /** Evict pods that no controller manages (kubectl drain --force). */
  readonly force: boolean;
  /** Epoch ms of NotBefore, or null: the grace of each pod ends `deadlineMarginSeconds` before it. */
  readonly notBefore: number | null;
  readonly deadlineMarginSeconds: number;
  /** wait: a pod a budget holds is tried until the deadline; delete: deleted past the budget when its grace would no longer end in time. */
  readonly onDeadline: 'wait' | 'delete';
  /** How often evicted pods are checked for being gone. */
  readonly pollMs: number;
  /** Epoch ms after which the drain gives up. */
  readonly deadline: number;
  readonly signal: AbortSignal;
  readonly logger: Logger;
}

export type DrainResult =
  | { readonly kind: 'drained'; readonly evicted: number; readonly deleted: number }
  /** `held`: the pods a disruption budget held to the end. */
  | { readonly kind: 'blocked'; readonly reason: string; readonly held?: readonly KubePod[] };

/** Pods evicted at once, while there is time. */
const CONCURRENCY = 16;
/** Less time than this left until NotBefore: every pod is evicted at once. */
export const HURRY_MS = 2 * 60_000;
/** The backoff of a pod a budget holds: from 500 ms, doubling, at most 5 s. */
const BUDGET_BACKOFF_MS = [500, 1000, 2000, 5000];
/** Pods can still land on a node whose cordon they raced: list again at most this often. */
const ROUNDS = 3;

const named = (p: KubePod) => `${p.namespace}/${p.name}`;
const EVICTED = { kind: 'evicted' } as const;
const DELETED = { kind: 'deleted' } as const;
const GONE = { kind: 'gone' } as const;

/** staysWhy: why a drain leaves a pod on the node (a mirror pod, a DaemonSet's), or null when it is the drain's to evict. */
export function staysWhy(pod: KubePod): string | null {
  if (pod.mirror) return 'mirror pod: the kubelet runs it from a file on the node';
  if (pod.ownerKinds.includes('DaemonSet')) return 'DaemonSet pod: it stays on the node';
  return null;
}

/** evictable: what a drain evicts (every pod that does not stay: staysWhy). */
export function evictable(pods: readonly KubePod[]): KubePod[] {
  return pods.filter((p) => staysWhy(p) === null);
}

/** What became of one pod the drain asked to evict. */
type Evicted =
  | { readonly kind: 'evicted' }
  | { readonly kind: 'deleted' }
  /** Gone or stopping already: nothing was done. */
  | { readonly kind: 'gone' }
  | { readonly kind: 'held'; readonly why: string };

/** Why a drain refuses to evict a pod, as `kubectl drain` does, and the key that lets it; null when it may. */
export function refusalOf(pod: KubePod, o: Pick<DrainOptions, 'force' | 'deleteEmptyDirData'>): Refusal | null {
  if (pod.terminating || pod.finished) return null;
  if (!o.force && pod.ownerKinds.length === 0) return UNMANAGED;
  if (!o.deleteEmptyDirData && pod.emptyDir) return LOCAL;
  return null;
}

interface Refusal {
  /** Of one pod. */
  readonly why: string;
  /** Of the pods it holds, in the drain's reason. */
  readonly pods: string;
  readonly key: string;
}
const UNMANAGED: Refusal = {
  why: 'no controller manages it: nothing would start it again',
  pods: 'cannot evict pods that no controller manages (nothing would start them again)',
  key: 'drain.force',
};
const LOCAL: Refusal = {
  why: 'local storage (emptyDir): its data would be lost',
  pods: 'cannot delete pods with local storage (emptyDir)',
  key: 'drain.deleteEmptyDirData',
};

/** refusals: why the drain cannot start, naming the pods and the key that allows them, or null. */
function refusals(pods: readonly KubePod[], o: DrainOptions): string | null {
  const refused = pods.map((p) => ({ p, r: refusalOf(p, o) })).filter((x) => x.r !== null);
  // pods no controller manages first, as kubectl drain names them
  const first = refused.find((x) => x.r === UNMANAGED)?.r ?? refused[0]?.r;
  if (first === undefined || first === null) return null;
  const same = refused.filter((x) => x.r!.key === first.key).map((x) => x.p);
  const more = same.length > 3 ? ` and ${same.length - 3} more` : '';
  return `${first.pods}: ${same.slice(0, 3).map(named).join(', ')}${more}; set ${first.key}: true to evict them`;
}

export async function drainNode(kube: Kube, node: string, o: DrainOptions): Promise<DrainResult> {
  let evicted = 0;
  let deleted = 0;
  for (let round = 0; round < ROUNDS; round += 1) {
    const pods = evictable(await kube.podsOn(node));
    if (pods.length === 0) return { kind: 'drained', evicted, deleted };
    const refused = refusals(pods, o);
    if (refused !== null) return { kind: 'blocked', reason: refused };
    o.logger.info({ node, pods: pods.length, round: round + 1 }, 'draining the node');
    const hurry = o.notBefore !== null && o.notBefore - Date.now() < HURRY_MS;
    const results = await pool(pods, hurry ? pods.length : CONCURRENCY, (pod) => evictOne(kube, pod, o));
    const held = results.flatMap((r) => (r.kind === 'held' ? [r.why] : []));
    evicted += results.filter((r) => r.kind === 'evicted' || r.kind === 'deleted').length;
    deleted += results.filter((r) => r.kind === 'deleted').length;
    if (held.length > 0)
      return {
        kind: 'blocked',
        reason: `${held.slice(0, 3).join('; ')}${held.length > 3 ? `; and ${held.length - 3} more` : ''}`,
        held: pods.filter((_, i) => results[i]?.kind === 'held'),
      };
    const stopping = await waitGone(kube, node, new Set(pods.map((p) => p.uid)), o);
    if (stopping.length > 0)
      return {
        kind: 'blocked',
        reason: `evicted but not stopped yet: ${stopping.slice(0, 3).map(named).join(', ')}${stopping.length > 3 ? ` and ${stopping.length - 3} more` : ''}`,
      };
  }
  const left = evictable(await kube.podsOn(node));
  return left.length === 0
    ? { kind: 'drained', evicted, deleted }
    : { kind: 'blocked', reason: `pods keep landing on the node: ${left.slice(0, 3).map(named).join(', ')}` };
}

/** evictOne evicts one pod (a budget's 429 is tried again with backoff), or deletes it past its budget (onDeadline: delete). */
async function evictOne(kube: Kube, pod: KubePod, o: DrainOptions): Promise<Evicted> {
  if (pod.terminating) return GONE;
  // with onDeadline: delete, the moment a budget stops holding the pod: its grace plus the margin before NotBefore
  const own = Math.min(pod.gracePeriodSeconds ?? o.gracePeriodSeconds, o.gracePeriodSeconds);
  const deleteAt = o.onDeadline === 'delete' && o.notBefore !== null ? o.notBefore - (o.deadlineMarginSeconds + own) * 1000 : Infinity;
  for (let tries = 1; ; tries += 1) {
    // a drain stopped (its event ended, the attempt timed out) evicts nothing more
    o.signal.throwIfAborted();
    const grace = graceOf(pod, o);
    const r = await kube.evict(pod, grace);
    if (r === 'gone') return GONE;
    if (r === 'evicted') return EVICTED;
    const said = r.budget;
    if (Date.now() >= deleteAt) return deletePastBudget(kube, pod, o, tries);
    const backoff = BUDGET_BACKOFF_MS[Math.min(tries - 1, BUDGET_BACKOFF_MS.length - 1)]! * (0.5 + Math.random() / 2);
    if (Date.now() >= o.deadline)
      return {
        kind: 'held',
        why: `pod ${named(pod)} is held by a PodDisruptionBudget (429 on ${tries} eviction${tries === 1 ? '' : 's'}: ${said})`,
      };
    // asked once more at the deadline itself: a budget may let go at the last moment
    await sleep(Math.max(0, Math.min(backoff, deleteAt - Date.now(), o.deadline - Date.now())), o.signal);
  }
}

/** deletePastBudget deletes a pod its budget still holds, with the grace that ends before NotBefore, and says so on the pod. */
async function deletePastBudget(kube: Kube, pod: KubePod, o: DrainOptions, tries: number): Promise<Evicted> {
  o.signal.throwIfAborted();
  const grace = graceOf(pod, o);
  if (!(await kube.deletePod(pod, grace))) return GONE;
  const why = `deleted with a ${grace} s grace past its PodDisruptionBudget (429 on ${tries} eviction${tries === 1 ? '' : 's'}): the maintenance starts at NotBefore`;
  o.logger.warn({ pod: named(pod), grace, code: 'KUBE_DELETED_PAST_BUDGET' }, `pod ${why}`);
  await kube.event(pod, 'DeletedPastBudget', `Pod ${why}`);
  return DELETED;
}

/** graceOf: the pod's own grace, at most gracePeriodSeconds, and ending deadlineMarginSeconds before NotBefore. */
export function graceOf(
  pod: KubePod,
  o: Pick<DrainOptions, 'gracePeriodSeconds' | 'notBefore' | 'deadlineMarginSeconds'>,
  now = Date.now(),
): number {
  const wanted = Math.min(pod.gracePeriodSeconds ?? o.gracePeriodSeconds, o.gracePeriodSeconds);
  if (o.notBefore === null) return wanted;
  return Math.max(0, Math.min(wanted, Math.floor((o.notBefore - now) / 1000) - o.deadlineMarginSeconds));
}

/** waitGone lists the node's pods until none of `uids` is left (a pod replaced under the same name has a new uid), or the deadline; it returns those left. */
async function waitGone(kube: Kube, node: string, uids: ReadonlySet<string>, o: DrainOptions): Promise<KubePod[]> {
  for (;;) {
    const left = (await kube.podsOn(node)).filter((p) => uids.has(p.uid));
    if (left.length === 0 || Date.now() >= o.deadline) return left;
    await sleep(Math.min(o.pollMs, Math.max(0, o.deadline - Date.now())), o.signal);
  }
}

/** pool runs `work` over `items`, at most `n` at a time, and keeps the results in order. */
export async function pool<T, R>(items: readonly T[], n: number, work: (item: T) => Promise<R>): Promise<R[]> {
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
