/**
 * pollOnce is one poll: read the document, diff it against the last one, map the changes to
 * CloudEvents. It does no I/O besides the IMDS read and no waiting; the loop, backoff and
 * rate budget live around it (daemon/poll-loop.ts). A failed read throws an ImdsError and
 * produces no transitions: it is never taken for an empty document. A good document that
 * cannot be mapped throws a MappingError: the fault is ours, and it is never reported as IMDS's.
 */
import type { ImdsClient } from '../imds/client.ts';
import type { VmIdentity } from '../imds/identity.ts';
import type { EventsDocument } from '../imds/wire.ts';
import { MappingError, occurrenceKey, toCloudEvent, type BridgeEvent } from './cloudevent.ts';
import { diff, type EndContext, type Transition } from './diff.ts';
import { messageOf } from '../lib/errors.ts';

export interface Baseline {
  readonly document: EventsDocument;
  readonly etag: string | null;
}

export type PollResult =
  | { readonly kind: 'unchanged'; readonly etag: string | null; readonly etagChanged: boolean }
  | {
      readonly kind: 'changed';
      readonly document: EventsDocument;
      readonly etag: string | null;
      readonly transitions: readonly Transition[];
      readonly events: readonly BridgeEvent[];
      /** Per event: its occurrence key and which occurrence it is (see cloudEventId). */
      readonly occurrences: readonly { readonly key: string; readonly n: number }[];
      readonly duplicates: number;
    };

export async function pollOnce(
  client: ImdsClient,
  baseline: Baseline | null,
  vm: VmIdentity,
  options: {
    signal?: AbortSignal;
    now?: () => Date;
    /** How often each transition (by occurrence key) happened before: the store's memory. */
    priorOccurrences?: (key: string) => number;
    /** What tells a maintenance that happened unseen from a cancellation (diff.ts); the read's time is added. */
    end?: Omit<EndContext, 'now'>;
  } = {},
): Promise<PollResult> {
  const read = await client.getScheduledEvents({ etag: baseline?.etag ?? null, signal: options.signal });
  if (read.kind === 'not-modified') return { kind: 'unchanged', etag: baseline?.etag ?? null, etagChanged: false };
  const now = options.now?.() ?? new Date();
  const end = options.end === undefined ? undefined : { ...options.end, now: now.getTime() };
  const transitions = diff(baseline?.document ?? null, read.document, end);
  if (transitions.length === 0 && baseline !== null && baseline.document.incarnation === read.document.incarnation) {
    return { kind: 'unchanged', etag: read.etag, etagChanged: read.etag !== baseline.etag };
  }
  const observedAt = now.toISOString();
  let events: BridgeEvent[];
  let occurrences: { key: string; n: number }[];
  try {
    occurrences = transitions.map((t) => {
      const key = occurrenceKey(t);
      return { key, n: (options.priorOccurrences?.(key) ?? 0) + 1 };
    });
    events = transitions.map((t, i) => toCloudEvent(t, { vm, observedAt, occurrence: occurrences[i]!.n }));
  } catch (err) {
    throw new MappingError(`cannot map IMDS document ${read.document.incarnation} to CloudEvents: ${messageOf(err)}`, err);
  }
  return { kind: 'changed', document: read.document, etag: read.etag, transitions, events, occurrences, duplicates: read.duplicates };
}
