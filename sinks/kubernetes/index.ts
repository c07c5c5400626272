/**
 * kubernetes sink: prepares the Kubernetes Node this VM is, and gives it back afterwards.
 *
 * - On what prepares (scheduled, updated, a started never seen before): cordon the Node, add
 *   the maintenance taint and the exclude-from-load-balancers label, record on the Node what
 *   this bridge changed (annotation `scheduledevents.azure.com/prepared`), then drain it
 *   through the Eviction API (kubernetes-drain.ts). Delivered once the node is empty of
 *   evictable pods.
 * - On completed and canceled: undo exactly what the annotation says this bridge did (a node an
 *   operator cordoned by hand stays cordoned), then remove the annotation.
 * - Every step is also a Kubernetes Event on the Node, so `kubectl describe node` tells the story.
 *
 * Node changes are strategic-merge patches carrying the resourceVersion they were computed
 * from, so a concurrent change is a 409 and the change is computed again. The client library
 * loads only when a kubernetes sink is configured.
 */
import { type BridgeEvent, deliveredWith, type Outcome, reject, retry, type SinkContext, transitionOf } from '../../src/api.ts';
import { ends, preparationSink, whileListed, type Preparation } from '../shared/preparation.ts';
import { configSchema, type KubernetesConfig } from './config.ts';
import { KUBE_CODES } from './codes.ts';
import { connect, KubeFailure, type Kube, type KubeNode } from './api.ts';
import { outcomeOf } from './failure.ts';
import { findNode, nodeNameOf } from './locate.ts';
import { plural, rehearseDrain } from './plan.ts';
import { drainNode } from './drain.ts';
import { aksActs, aksCondition, aksHoldsCordon, waitEmpty } from './aks.ts';
import { clearCondition, setCondition } from './condition.ts';
import { ANNOTATION, EXCLUDE_LABEL, Records, TAINT_KEY, type Prepared } from './record.ts';

export { ANNOTATION, EXCLUDE_LABEL, TAINT_KEY } from './record.ts';

export const kubernetesSink = preparationSink<KubernetesConfig, typeof configSchema>({
  type: 'kubernetes',
  configSchema,
  codes: KUBE_CODES,
  workMs: (c) => c.drain.timeoutSeconds * 1000,
  make: async (config, context) => new NodePreparation(config, context, await connect(config.kubeconfig)),
  rehearse: async (config, options) => rehearseDrain(config, await connect(config.kubeconfig), options),
  advisories: (config) => config.advisory === 'cordon',
  // a drill's real drain gives each pod its own grace (at most gracePeriodSeconds): the notice must cover it
  realDrillNotice: (config) => ({
    seconds: config.drain.gracePeriodSeconds + config.drain.deadlineMarginSeconds,
    why: `a real drain gives each pod up to drain.gracePeriodSeconds (${config.drain.gracePeriodSeconds} s) and ends drain.deadlineMarginSeconds (${config.drain.deadlineMarginSeconds} s) before NotBefore`,
  }),
});

class NodePreparation implements Preparation {
  readonly #c: KubernetesConfig;
  readonly #ctx: SinkContext;
  readonly #client: Kube;
  /** The client of the attempt under way: its calls end with it. */
  #kube: Kube;
  readonly #records: Records;
  #nodeName: string | null;

  constructor(config: KubernetesConfig, context: SinkContext, kube: Kube) {
    this.#c = config;
    this.#ctx = context;
    this.#client = kube;
    this.#kube = kube;
    this.#records = new Records(context.state);
    this.#nodeName = nodeNameOf(config.nodeName);
  }

  async close(): Promise<void> {}

  async deliver(event: BridgeEvent, signal: AbortSignal): Promise<Outcome> {
    const d = event.data;
    this.#kube = this.#client.scoped(signal);
    try {
      // a drill's rehearsal: the drain asked as dry runs, nothing changed
      if (this.#ctx.drill?.(d.eventId)?.prepare === 'rehearse') return await this.#rehearse(event, signal);
      const node = await this.#node();
      if (ends(event)) return await this.#giveBack(node, d.eventId, transitionOf(event));
      if (d.eventStatus === 'Advisory') {
        // a Spot eviction risk, with advisory: cordon: no new pod lands here; nothing is drained
        const cordoned = await this.#prepare(node, d.eventId, d.eventType, null, true);
        return deliveredWith(`node ${cordoned.name} cordoned for the advisory (${d.eventType}); nothing drained`);
      }
      if (d.notBefore !== null && Date.parse(d.notBefore) <= Date.now() && transitionOf(event) !== 'started') {
        // the platform may start at any moment now: still prepare, but a drain cannot outlast it
        this.#ctx.logger.warn({ eventId: d.eventId, notBefore: d.notBefore }, 'NotBefore has passed; preparing the node anyway');
      }
      // a drain follows its event: one that IMDS no longer lists (canceled, completed, gone while
      // this waited, or before a restart) is not started, and one running stops at the first read
      // without it; what was done is given back by the end that follows
      const r = await whileListed(this.#ctx.reads, d.eventId, signal, (s) => {
        this.#kube = this.#client.scoped(s);
        return this.#prepareAndDrain(node, event, s);
      });
      if (r.kind === 'done') return r.value;
      if (r.kind === 'stopped')
        this.#ctx.logger.info({ eventId: d.eventId, code: 'KUBE_DRAIN_STOPPED' }, 'the event is no longer listed: the drain stopped');
      return deliveredWith(
        r.kind === 'stopped'
          ? `drain stopped: event ${d.eventId} is no longer listed`
          : `event ${d.eventId} is no longer listed: nothing prepared`,
      );
    } catch (err) {
      return outcomeOf(err, this.#ctx);
    }
  }

  async #rehearse(event: BridgeEvent, signal: AbortSignal): Promise<Outcome> {
    if (ends(event)) return deliveredWith('rehearsed: nothing to give back');
    const nb = event.data.notBefore === null ? null : Date.parse(event.data.notBefore);
    const vm = async () => this.#ctx.vm?.() ?? null;
    const r = await rehearseDrain(this.#c, this.#client, { noticeMs: nb === null ? null : Math.max(0, nb - Date.now()), vm, signal });
    return r.ready ? deliveredWith(`rehearsed: ${r.summary}`) : reject(`KUBE_DRILL_BLOCKED: rehearsed: ${r.summary}`);
  }

  /** prepareAndDrain cordons, taints and labels the Node, then drains it, bounded by NotBefore and the signal. */
  async #prepareAndDrain(node: KubeNode, event: BridgeEvent, signal: AbortSignal): Promise<Outcome> {
    const d = event.data;
    const prepared = await this.#prepare(node, d.eventId, d.eventType, d.notBefore);
    const deadline = Math.min(
      Date.now() + this.#c.drain.timeoutSeconds * 1000,
      d.notBefore === null ? Infinity : Math.max(Date.parse(d.notBefore), Date.now() + 1000),
    );
    if (aksActs(prepared, d.eventType)) {
      // AKS's node auto-drain has this node: nothing is evicted twice; the node empty is what counts
      const aks = await waitEmpty(this.#kube, prepared.name, { deadline, pollMs: this.#c.drain.pollMs, signal, eventType: d.eventType });
      if (aks === 'deadline') return retry(`KUBE_DRAIN_BLOCKED: AKS's node auto-drain has not emptied node ${prepared.name} yet`);
      if (aks === 'empty') {
        await this.#kube.event(
          prepared,
          'Drained',
          `Drained by AKS's node auto-drain for maintenance ${d.eventId}; se-bridge evicted nothing`,
        );
        return deliveredWith(`node ${prepared.name} drained by AKS's node auto-drain`);
      }
      // AKS's marks went with pods still on the node: no drain is coming from it, this bridge drains
      this.#ctx.logger.info({ eventId: d.eventId, node: prepared.name }, "AKS's node auto-drain no longer acts on the node; draining it");
    }
    // a drill never hurts: its real drain gives each pod its own grace (not clamped by the drill's
    // invented NotBefore) and never deletes a pod past its budget
    const drill = this.#ctx.drill?.(d.eventId) !== null && this.#ctx.drill?.(d.eventId) !== undefined;
    const notBefore = d.notBefore === null || drill ? null : Date.parse(d.notBefore);
    const drain = drill ? { ...this.#c.drain, onDeadline: 'wait' as const } : this.#c.drain;
    const drained = await drainNode(this.#kube, prepared.name, {
      ...drain,
      notBefore,
      deadline: drill ? Date.now() + this.#c.drain.timeoutSeconds * 1000 : deadline,
      signal,
      logger: this.#ctx.logger,
    });
    if (drained.kind === 'blocked') {
      const past = d.notBefore !== null && Date.parse(d.notBefore) <= Date.now();
      if (!past) return retry(`KUBE_DRAIN_BLOCKED: ${drained.reason}`);
      // past NotBefore the maintenance happens whatever we do: trying again would only repeat the
      // failure; the Node and each pod its budget held say so (drain.onDeadline: wait)
      const why = `NotBefore of maintenance ${d.eventId} passed with the node not drained: ${drained.reason}`;
      await this.#kube.event(prepared, 'DrainIncomplete', why, 'Warning');
      for (const pod of drained.held ?? [])
        await this.#kube.event(
          pod,
          'EvictionBlocked',
          `Not evicted before NotBefore of maintenance ${d.eventId}: its PodDisruptionBudget held it (drain.onDeadline: wait)`,
          'Warning',
        );
      return reject(`KUBE_DRAIN_INCOMPLETE: ${why}`);
    }
    const past = drained.deleted > 0 ? `, ${drained.deleted} of them deleted past their disruption budget` : '';
    await this.#kube.event(prepared, 'Drained', `Drained for maintenance ${d.eventId}: ${plural(drained.evicted, 'pod')} evicted${past}`);
    return deliveredWith(`node ${prepared.name} cordoned and drained: ${plural(drained.evicted, 'pod')} evicted${past}`);
  }

  /** node finds the Node this VM is (by its resource id once; its name is kept). */
  async #node(): Promise<KubeNode> {
    const node = await findNode(this.#kube, this.#nodeName, async () => this.#ctx.vm?.().resourceId ?? null);
    this.#nodeName = node.name;
    return node;
  }

  /** prepare cordons, taints and labels the Node (what is not so already), and records what it changed. */
  async #prepare(first: KubeNode, eventId: string, eventType: string, notBefore: string | null, cordonOnly = false): Promise<KubeNode> {
    let node = first;
    for (let attempt = 0; ; attempt += 1) {
      const before = this.#records.of(node);
      if (before?.eventIds.includes(eventId)) return node;
      const record: Prepared = before
        ? { ...before, eventIds: [...before.eventIds, eventId] }
        : {
            eventIds: [eventId],
            cordoned: !node.unschedulable,
            tainted: !cordonOnly && this.#c.taint && !node.taints.some((t) => t.key === TAINT_KEY),
            labeled: !cordonOnly && this.#c.excludeFromLoadBalancers && node.labels[EXCLUDE_LABEL] === undefined,
            conditioned: !cordonOnly && this.#c.condition && aksCondition(node) === null,
            at: new Date().toISOString(),
          };
      const patch = {
        metadata: {
          resourceVersion: node.resourceVersion,
          annotations: { [ANNOTATION]: JSON.stringify(record) },
          ...(record.labeled ? { labels: { [EXCLUDE_LABEL]: 'true' } } : {}),
        },
        spec: {
          ...(record.cordoned ? { unschedulable: true } : {}),
          ...(this.#c.taint && !cordonOnly
            ? { taints: [...node.taints.filter((t) => t.key !== TAINT_KEY), { key: TAINT_KEY, value: eventType, effect: 'NoSchedule' }] }
            : {}),
        },
      };
      try {
        const patched = await this.#kube.patchNode(node.name, patch);
        this.#records.keep(node.name, record);
        this.#ctx.logger.info({ node: node.name, eventId, ...record }, 'node prepared for maintenance');
        await this.#kube.event(
          patched,
          'MaintenanceScheduled',
          `Maintenance ${eventId} (${eventType}) not before ${notBefore ?? 'unknown'}; preparing the node`,
        );
        if (record.cordoned && before === null) await this.#kube.event(patched, 'Cordoned', `Cordoned for maintenance ${eventId}`);
        if (record.conditioned && before === null)
          await setCondition(this.#kube, patched, { eventId, eventType, notBefore }, this.#ctx.logger);
        return patched;
      } catch (err) {
        if (!(err instanceof KubeFailure && err.status === 409) || attempt >= 4) throw err;
        node = await this.#kube.readNode(node.name);
      }
    }
  }

  /** giveBack undoes what the annotation says this bridge did, once no other event still holds the node. */
  async #giveBack(first: KubeNode, eventId: string, transition: string): Promise<Outcome> {
    let node = first;
    for (let attempt = 0; ; attempt += 1) {
      const before = this.#records.of(node);
      // a record that lost its events (a damaged annotation beside the bridge's own taint) is given back whole
      if (before === null || (before.eventIds.length > 0 && !before.eventIds.includes(eventId)))
        return deliveredWith(`node ${node.name}: nothing to give back`);
      const left = before.eventIds.filter((id) => id !== eventId);
      const last = left.length === 0;
      // a cordon AKS holds (its taint is on the node) is AKS's to lift
      const uncordon = before.cordoned && !aksHoldsCordon(node);
      const patch = last
        ? {
            metadata: {
              resourceVersion: node.resourceVersion,
              annotations: { [ANNOTATION]: null },
              ...(before.labeled ? { labels: { [EXCLUDE_LABEL]: null } } : {}),
            },
            spec: {
              ...(uncordon ? { unschedulable: null } : {}),
              ...(before.tainted ? { taints: node.taints.filter((t) => t.key !== TAINT_KEY) } : {}),
            },
          }
        : {
            metadata: {
              resourceVersion: node.resourceVersion,
              annotations: { [ANNOTATION]: JSON.stringify({ ...before, eventIds: left }) },
            },
          };
      try {
        const patched = await this.#kube.patchNode(node.name, patch);
        this.#records.keep(node.name, last ? null : { ...before, eventIds: left });
        const reason = transition === 'canceled' ? 'MaintenanceCanceled' : 'MaintenanceCompleted';
        await this.#kube.event(patched, reason, `Maintenance ${eventId} ${transition}`);
        if (!last) return deliveredWith(`node ${node.name} stays prepared for ${left.join(', ')}`);
        if (uncordon) await this.#kube.event(patched, 'Uncordoned', `Uncordoned after maintenance ${eventId}`);
        if (before.conditioned) await clearCondition(this.#kube, patched, this.#ctx.logger);
        this.#ctx.logger.info({ node: node.name, eventId, transition }, 'node given back after maintenance');
        const aks = before.cordoned && !uncordon ? ": left cordoned, AKS's remediator holds it" : '';
        return deliveredWith(`node ${node.name} given back${uncordon ? ': uncordoned' : aks}`);
      } catch (err) {
        if (!(err instanceof KubeFailure && err.status === 409) || attempt >= 4) throw err;
        node = await this.#kube.readNode(node.name);
      }
    }
  }
}
