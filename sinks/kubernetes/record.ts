/**
 * What this bridge changed on a Node, and how that record survives what can happen to it. The
 * record lives in the Node's annotation (so `kubectl` shows it) and, as a durable copy, in the
 * sink's own state in the bridge's store. Reading merges the two with the marks that are the
 * bridge's own (its taint key): an annotation that is missing or unreadable never makes the
 * bridge forget what it did, and is never overwritten with a record that says it did less.
 */
import type { SinkState } from '../../src/api.ts';
import type { KubeNode } from './api.ts';
import { CONDITION_TYPE } from './condition.ts';

export const ANNOTATION = 'scheduledevents.azure.com/prepared';
export const TAINT_KEY = 'scheduledevents.azure.com/maintenance';
export const EXCLUDE_LABEL = 'node.kubernetes.io/exclude-from-external-load-balancers';

export interface Prepared {
  /** The maintenance events this preparation is for (the first one made the changes). */
  readonly eventIds: string[];
  readonly cordoned: boolean;
  readonly tainted: boolean;
  readonly labeled: boolean;
  /** The ScheduledMaintenance Node condition was set (condition.ts). */
  readonly conditioned: boolean;
  readonly at: string;
}

/** readPrepared reads the annotation: the record, null when there is none, 'unreadable' when it is damaged. */
export function readPrepared(text: string | undefined): Prepared | null | 'unreadable' {
  if (text === undefined) return null;
  try {
    const v = JSON.parse(text) as Partial<Prepared>;
    if (v === null || typeof v !== 'object' || !Array.isArray(v.eventIds)) return 'unreadable';
    return {
      eventIds: v.eventIds.map(String),
      cordoned: v.cordoned === true,
      tainted: v.tainted === true,
      labeled: v.labeled === true,
      conditioned: v.conditioned === true,
      at: String(v.at ?? ''),
    };
  } catch {
    return 'unreadable';
  }
}

const stateKey = (node: string) => `prepared:${node}`;

/** Records keeps the durable copy of each Node's record in the sink's state. */
export class Records {
  readonly #state: SinkState | undefined;

  constructor(state: SinkState | undefined) {
    this.#state = state;
  }

  /**
   * of: what this bridge did to the Node, as far as anything tells: the annotation, the durable
   * copy and its own taint, merged (an event or a change any of them records counts). Null when
   * none records anything.
   */
  of(node: KubeNode): Prepared | null {
    const annotated = readPrepared(node.annotations[ANNOTATION]);
    const kept = readPrepared(this.#state?.get(stateKey(node.name)) || undefined);
    const records = [annotated, kept].filter((r): r is Prepared => r !== null && r !== 'unreadable');
    const ourTaint = node.taints.some((t) => t.key === TAINT_KEY);
    if (records.length === 0) {
      // a damaged annotation beside the bridge's own taint: the preparation was ours, and whole
      if (annotated === 'unreadable' && ourTaint)
        return {
          eventIds: [],
          cordoned: node.unschedulable,
          tainted: true,
          labeled: node.labels[EXCLUDE_LABEL] !== undefined,
          conditioned: node.conditions.some((c) => c.type === CONDITION_TYPE),
          at: '',
        };
      return null;
    }
    return {
      eventIds: [...new Set(records.flatMap((r) => r.eventIds))],
      cordoned: records.some((r) => r.cordoned),
      tainted: records.some((r) => r.tainted) || ourTaint,
      labeled: records.some((r) => r.labeled),
      conditioned: records.some((r) => r.conditioned),
      at: records[0]!.at,
    };
  }

  /** keep writes the durable copy (null: the Node was given back). */
  keep(node: string, record: Prepared | null): void {
    this.#state?.set(stateKey(node), record === null ? '' : JSON.stringify(record));
  }
}
