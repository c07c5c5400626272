/**
 * The batching loop of the Azure messaging sinks: fills SDK batches grouped by partition key or
 * session, splits them when full, and turns each send into outcomes.
 */
import { z } from 'zod';
import { type BridgeEvent, delivered, type Outcome, reject } from '../../src/api.ts';
import { classifyAzureError } from '../../src/kit.ts';

/** GroupBy: what keeps events together (an Event Hubs partition key, a Service Bus session): the EventId, the VM, or nothing. */
export const GroupBy = z.enum(['eventId', 'vmName', 'none']);

/** groupOf is the partition key or session id of an event. */
export function groupOf(by: z.infer<typeof GroupBy>, e: BridgeEvent): string | undefined {
  return by === 'eventId' ? e.subject : by === 'vmName' ? e.data?.vm.name : undefined;
}

/** A batch as both SDKs offer it. */
export interface SdkBatch<M> {
  readonly count: number;
  readonly maxSizeInBytes: number;
  tryAdd(message: M): boolean;
}

/**
 * sendInBatches sends `events` grouped by `groupOf` (events of one group share a batch, in
 * order), splitting a batch when it is full. An event too large for an empty batch is
 * rejected with the size it has and the size allowed. A failed send gives every event of that
 * batch, and the rest of its group, the classified outcome.
 */
export async function sendInBatches<M>(
  events: readonly BridgeEvent[],
  groupOf: (e: BridgeEvent) => string | undefined,
  toMessage: (e: BridgeEvent) => M,
  sizeOf: (m: M) => number,
  newBatch: (group: string | undefined) => Promise<SdkBatch<M>>,
  sendBatch: (batch: SdkBatch<M>) => Promise<void>,
): Promise<Outcome[]> {
  const outcomes: (Outcome | undefined)[] = new Array(events.length);
  const groups = new Map<string | undefined, number[]>();
  events.forEach((e, i) => {
    const g = groupOf(e);
    const list = groups.get(g);
    if (list) list.push(i);
    else groups.set(g, [i]);
  });
  for (const [group, indexes] of groups) {
    let members: number[] = [];
    try {
      let batch = await newBatch(group);
      for (const i of indexes) {
        const message = toMessage(events[i]!);
        if (batch.tryAdd(message)) {
          members.push(i);
          continue;
        }
        if (members.length > 0) {
          await sendBatch(batch);
          for (const m of members) outcomes[m] = delivered;
          members = [];
          batch = await newBatch(group);
          if (batch.tryAdd(message)) {
            members.push(i);
            continue;
          }
        }
        outcomes[i] = reject(
          `MessageSizeExceeded: the event is about ${sizeOf(message)} bytes; the entity accepts at most ${batch.maxSizeInBytes}`,
        );
      }
      if (members.length > 0) {
        await sendBatch(batch);
        for (const m of members) outcomes[m] = delivered;
      }
    } catch (err) {
      const outcome = classifyAzureError(err);
      for (const i of indexes) outcomes[i] ??= outcome;
    }
  }
  return outcomes.map((o) => o ?? reject('internal: no outcome'));
}
