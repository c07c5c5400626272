/**
 * AzureFeed keeps Azure's own records of the fleet's scheduled events in the fleet store (from
 * Event Grid deliveries and Resource Graph), and says once, between every replica, each event a
 * VM has that no bridge watches: `azure.scheduledevent.unwatched` to the relay's sinks, a log line
 * (RELAY_UNWATCHED) and a metric. Which replica says it is the store's to decide: the one whose
 * conditional write of the record's `unwatched` entry wins.
 */
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { errorFields } from '../lib/errors.ts';
import { sleep, spread } from '../lib/time.ts';
import { build, dataWith, type BridgeEvent } from '../pipeline/cloudevent.ts';
import { azureRecordName, AzureRecordSchema, eventOf, merged, vmOf, type AzureEvent, type AzureRecord } from '../fleet/view/azure.ts';
import { unwatchedIn, type UnwatchedFinding } from '../fleet/view/events.ts';
import type { FleetReader, KeptAzureRecord } from '../fleet/view/snapshot.ts';
import type { AzureFeedConfig } from './fleet-config.ts';
import type { RelayMetrics } from './bus.ts';
import type { RelaySinks } from './sinks.ts';

export interface AzureFeedOptions {
  readonly config: AzureFeedConfig;
  readonly reader: FleetReader;
  readonly sinks: RelaySinks;
  readonly logger: Logger;
  readonly metrics: RelayMetrics;
  /** This replica's name, written beside what it said. */
  readonly replica: string;
  readonly now?: () => number;
}

export class AzureFeed {
  readonly #o: AzureFeedOptions;
  readonly #now: () => number;
  #checking: Promise<number> | null = null;

  constructor(o: AzureFeedOptions) {
    this.#o = o;
    this.#now = o.now ?? Date.now;
  }

  /**
   * keep writes each report into its event's record (a newer one only); how many records changed.
   * A report the last read of the store shows already kept costs no request (Resource Graph lists
   * every pending event at each poll); the others are written eight at a time. Throws when the
   * store fails.
   */
  async keep(events: readonly AzureEvent[]): Promise<number> {
    const snapshot = await this.#o.reader.read();
    const known = new Map(snapshot.azure.map((a) => [a.name, a.record]));
    const now = new Date(this.#now()).toISOString();
    const fresh = events.filter((e) => {
      const r = known.get(azureRecordName(e.eventId, e.resourceId));
      return r === undefined || merged(r, e, now) !== null;
    });
    let changed = 0;
    for (let i = 0; i < fresh.length; i += 8) {
      const written = await Promise.all(fresh.slice(i, i + 8).map((e) => this.#keepOne(e)));
      changed += written.filter(Boolean).length;
    }
    if (changed > 0) void this.check(0);
    return changed;
  }

  /** check finds the unwatched events and says each once; how many this replica said. Never throws. */
  check(maxAgeMs?: number): Promise<number> {
    this.#checking ??= this.#check(maxAgeMs)
      .catch((err: unknown) => {
        this.#o.logger.warn({ ...errorFields(err) }, 'relay: could not look for unwatched events');
        return 0;
      })
      .finally(() => (this.#checking = null));
    return this.#checking;
  }

  /** settled: resolves once the check under way, if any, is over (the relay waits for it before closing its sinks). */
  async settled(): Promise<void> {
    await this.#checking;
  }

  /** run looks for unwatched events every checkSeconds (varied by a fifth) until the signal aborts. */
  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      await this.check();
      await sleep(spread(this.#o.config.checkSeconds * 1000, 0.2), signal).catch(() => undefined);
    }
  }

  async #keepOne(e: AzureEvent): Promise<boolean> {
    const store = this.#o.reader.azureStore;
    const name = azureRecordName(e.eventId, e.resourceId);
    for (let round = 0; round < 5; round++) {
      const current = await store.get(name);
      const previous = current === null ? null : (AzureRecordSchema.safeParse(current.value).data ?? null);
      const next = merged(previous, e, new Date(this.#now()).toISOString());
      if (next === null) return false;
      if ((await store.put(name, next, current?.version ?? null)) !== null) return true;
    }
    return false;
  }

  async #check(maxAgeMs?: number): Promise<number> {
    const snapshot = await this.#o.reader.read(maxAgeMs);
    if (snapshot.unread.length > 0) {
      // nothing is said from a failed read: looked for again at the next check
      this.#o.logger.warn(
        { code: 'FLEET_STORE_UNAVAILABLE', why: snapshot.unread[0]!.why },
        'relay: the fleet store could not be read; unwatched events are looked for again at the next check',
      );
      return 0;
    }
    const now = this.#now();
    const kept = new Map(snapshot.azure.map((a) => [a.record, a]));
    const findings = unwatchedIn(snapshot, { afterSeconds: this.#o.config.unwatchedAfterSeconds }, now).filter(
      (f) => !f.record.unwatched.some((u) => u.vm.toLowerCase() === f.vm.toLowerCase()),
    );
    let said = 0;
    for (const f of findings) if (await this.#claim(f, kept.get(f.record)!, now)) said++;
    return said;
  }

  /**
   * claim writes the finding into the record, over the version the read found: the replica whose
   * write wins says it; one that lost (another said it, or a newer report came) looks again at the next check.
   */
  async #claim(f: UnwatchedFinding, kept: KeptAzureRecord, now: number): Promise<boolean> {
    const record = kept.record;
    const at = new Date(now).toISOString();
    const next: AzureRecord = { ...record, unwatched: [...record.unwatched, { vm: f.vm, why: f.why, at, by: this.#o.replica }] };
    if ((await this.#o.reader.azureStore.put(kept.name, next, kept.version)) === null) return false;
    const event = toUnwatchedCloudEvent(f, record, at);
    this.#o.metrics.unwatched.inc({ why: f.why });
    this.#o.logger.warn(
      { code: 'RELAY_UNWATCHED', vm: f.vm, eventId: record.eventId, why: f.why, group: f.group, ceId: event.id },
      `relay: ${f.vm} has maintenance ${record.eventId} (${record.eventType}, ${record.status}) that no bridge watches (${f.why})`,
    );
    await this.#o.sinks.emit(event);
    return true;
  }
}

/** toUnwatchedCloudEvent: `azure.scheduledevent.unwatched`, its id stable from the EventId and the VM (the same from every replica). */
export function toUnwatchedCloudEvent(f: UnwatchedFinding, r: AzureRecord, at: string): BridgeEvent {
  const digest = createHash('sha256').update(`${r.eventId}\n${f.vm.toLowerCase()}`).digest('hex').slice(0, 32);
  const ctx = { vm: vmOf(f.vm, r.resourceId), observedAt: at };
  const unwatched = { why: f.why, group: f.group, heartbeatAt: f.heartbeatAt, source: r.source, firstSeenAt: r.firstSeenAt };
  // the event is this VM's, whatever Resources Azure listed
  const data = { ...dataWith(eventOf(r), 0, ctx, { unwatched }), affectsThisVm: true };
  return build(`unwatched/${digest}`, 'unwatched', data, 0, ctx);
}
