/**
 * What the sinks that prepare the VM (probe, kubernetes) share: a filter whose scope is this
 * VM unless told otherwise, the `prepare` switch that lets `approveAfterHooks` wait for them,
 * and the transitions that prepare and those that give the VM back.
 */
import { z } from 'zod';
import {
  type BridgeEvent,
  FilterConfig,
  type ImdsRead,
  type ImdsReads,
  matchesFilter,
  oneByOne,
  type Outcome,
  type ScheduledEvent,
  type SinkConfigBase,
  type SinkContext,
  type SinkModule,
  transitionOf,
} from '../../src/api.ts';

/** A preparation's filter: scope `self` by default (a VM prepares itself for its own maintenance). */
export const preparationFilter = FilterConfig.extend({
  scope: z
    .enum(['all', 'self', 'leader'])
    .default('self')
    .describe('As for every sink; a preparation defaults to self: the events naming this VM.'),
}).prefault({});

export const preparationKeys = {
  filter: preparationFilter,
  prepare: z.boolean().default(false).describe('A preparation: rules with `approveAfterHooks` wait for it to succeed.'),
};

/** ends: the transition gives the VM back (the maintenance is over, or will not happen). */
export function ends(event: BridgeEvent): boolean {
  const t = transitionOf(event);
  return t === 'completed' || t === 'canceled';
}

/**
 * pendingFor: the maintenance IMDS lists that the preparation's filter takes for this VM (all of
 * it while its name is unknown). An Advisory, or a status this version does not know, announces
 * no maintenance: it is never pending for a preparation.
 */
export function pendingFor(filter: FilterConfig, events: readonly ScheduledEvent[], vmName: string | null): ScheduledEvent[] {
  return events.filter(
    (e) =>
      (e.eventStatus === 'Scheduled' || e.eventStatus === 'Started') &&
      matchesFilter(
        filter,
        { transition: 'scheduled', eventType: e.eventType, eventSource: e.eventSource, resources: e.resources, eventId: e.eventId },
        vmName,
      ),
  );
}

/** What `whileListed` came to: the work's result, or the event no longer listed (before it began, or while it ran). */
export type Followed<T> = { readonly kind: 'done'; readonly value: T } | { readonly kind: 'not-listed' } | { readonly kind: 'stopped' };

/**
 * whileListed runs a preparation's work only while IMDS lists its event: not at all when the
 * latest read (right after a start, the first one) no longer lists it, and with a signal that
 * aborts at the first read without it, so a drain stops within one poll of a cancel or a
 * completion. Without reads to follow, the work just runs.
 */
export async function whileListed<T>(
  reads: ImdsReads | undefined,
  eventId: string,
  signal: AbortSignal,
  work: (signal: AbortSignal) => Promise<T>,
): Promise<Followed<T>> {
  if (reads === undefined) return { kind: 'done', value: await work(signal) };
  const listed = (read: ImdsRead | null) => read === null || read.events.some((e) => e.eventId === eventId);
  if (!listed(reads.last() ?? (await nextRead(reads, signal)))) return { kind: 'not-listed' };
  const ended = new AbortController();
  const unfollow = reads.subscribe((read) => {
    if (!listed(read)) ended.abort(new Error(`event ${eventId} is no longer listed`));
  });
  try {
    return { kind: 'done', value: await work(AbortSignal.any([signal, ended.signal])) };
  } catch (err) {
    if (ended.signal.aborted) return { kind: 'stopped' };
    throw err;
  } finally {
    unfollow();
  }
}

/** nextRead: the next IMDS read, or null when the signal aborts first. */
function nextRead(reads: ImdsReads, signal: AbortSignal): Promise<ImdsRead | null> {
  return new Promise((resolve) => {
    const done = (read: ImdsRead | null) => {
      unsubscribe();
      signal.removeEventListener('abort', onAbort);
      resolve(read);
    };
    const onAbort = () => done(null);
    const unsubscribe = reads.subscribe((read) => done(read));
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** A preparation as its sink module drives it: one event at a time. */
export interface Preparation {
  deliver(event: BridgeEvent, signal: AbortSignal): Promise<Outcome>;
  close(): Promise<void>;
}

/**
 * preparationSink makes the module of a sink that prepares the VM and gives it back: one event
 * per send, and an attempt that may take `workMs` (a drain) on top of the delivery timeout.
 */
export function preparationSink<C extends SinkConfigBase, S extends z.ZodType<C>>(spec: {
  readonly type: string;
  readonly configSchema: S;
  /** The codes the sink speaks in, with their meanings (SinkModule.codes). */
  readonly codes?: Readonly<Record<string, string>>;
  readonly workMs: (config: C) => number;
  readonly make: (config: C, context: SinkContext) => Promise<Preparation>;
  /** What a preparation would do now, changing nothing (SinkModule.rehearse). */
  readonly rehearse?: SinkModule<C, S>['rehearse'];
  /** The least notice a drill with real preparations needs (SinkModule.realDrillNotice). */
  readonly realDrillNotice?: SinkModule<C, S>['realDrillNotice'];
  /** Whether it acts on an Advisory (SinkModule.advisories). */
  readonly advisories?: SinkModule<C, S>['advisories'];
}): SinkModule<C, S> {
  const { type, configSchema, codes, workMs, make, rehearse, realDrillNotice, advisories } = spec;
  return {
    type,
    configSchema,
    ...(codes === undefined ? {} : { codes }),
    ...(rehearse === undefined ? {} : { rehearse }),
    ...(realDrillNotice === undefined ? {} : { realDrillNotice }),
    ...(advisories === undefined ? {} : { advisories }),
    maxBatchSize: 1,
    undoes: true,
    async create(config, context) {
      const p = await make(config, context);
      return {
        attemptTimeoutMs: workMs(config) + config.delivery.timeoutMs,
        send: (events, options) => oneByOne(events, (e) => p.deliver(e, options.signal)),
        close: () => p.close(),
      };
    },
  };
}
