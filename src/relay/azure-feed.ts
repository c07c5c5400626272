/**
 * AzureFeed keeps Azure's own records of the fleet's scheduled events in the fleet store (from
 * Event Grid deliveries and Resource Graph), and says once, between every replica, each event a
 * VM has that no bridge watches: `azure.scheduledevent.unwatched` to the relay's sinks, a log line
 * (RELAY_UNWATCHED) and a metric. Which replica says it is the store's to decide: the one whose
 * conditional write of the record's `unwatched` entry wins.
 */
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { BridgeError, errorFields } from '../lib/errors.ts';
import { sleep, spread } from '../lib/time.ts';
import { build, dataWith, type BridgeEvent } from '../pipeline/cloudevent.ts';
import { azureRecordName, ended, eventOf, merged, vmOf, vmsNamed, type AzureEvent, type AzureRecord } from '../fleet/view/azure.ts';
import { unwatchedIn, type UnwatchedFinding } from '../fleet/view/events.ts';
import type { FleetReader, FleetSnapshot, KeptAzureRecord } from '../fleet/view/snapshot.ts';
import type { AzureFeedConfig } from './fleet-config.ts';
import type { RelayMetrics } from './metrics.ts';
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
   * every pending event at each poll); the others are written eight at a time, one per record (the
   * latest the reports hold). Reports that would add more than `maxNew` VMs' events (an Event Grid
   * delivery's bound) are refused whole with TooManyEvents, before anything is written. Throws when
   * the store fails.
   */
  async keep(events: readonly AzureEvent[], maxNew = Infinity): Promise<number> {
    const snapshot = await this.#o.reader.read();
    const known = new Map(snapshot.azure.map((a) => [a.name, a.record]));
    const now = new Date(this.#now()).toISOString();
    const latest = new Map<string, AzureEvent>();
    for (const e of events) {
      const name = azureRecordName(e.eventId, e.resourceId);
      const seen = latest.get(name);
      if (seen === undefined || Date.parse(e.at) >= Date.parse(seen.at)) latest.set(name, e);
    }
    const fresh = [...latest].flatMap(([name, e]) => {
      const r = known.get(name);
      return r === undefined || merged(r, e, now) !== null ? [e] : [];
    });
    const added = fresh.reduce((n, e) => n + newVms(known.get(azureRecordName(e.eventId, e.resourceId)), e), 0);
    if (added > maxNew) throw new TooManyEvents(added, maxNew);
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
    const store = this.#o.reader.azure;
    const name = azureRecordName(e.eventId, e.resourceId);
    for (let round = 0; round < 5; round++) {
      const current = await store.get(name);
      // a record that does not open (not a relay's) is none, and is written over
      const previous = current?.record ?? null;
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
    await this.#forget(snapshot, now);
    const kept = new Map(snapshot.azure.map((a) => [a.record, a]));
    const findings = unwatchedIn(snapshot, { afterSeconds: this.#o.config.unwatchedAfterSeconds }, now).filter(
      (f) => !f.record.unwatched.some((u) => u.vm.toLowerCase() === f.vm.toLowerCase()),
    );
    let said = 0;
    for (const f of findings) if (await this.#claim(f, kept.get(f.record)!, now)) said++;
    return said;
  }

  /**
   * forget deletes Azure's records of events that ended more than forgetEndedAfterSeconds ago,
   * each over the version the read found (a record changed since stays), eight at a time.
   */
  async #forget(snapshot: FleetSnapshot, now: number): Promise<void> {
    const bound = this.#o.config.forgetEndedAfterSeconds * 1000;
    const old = snapshot.azure.filter(({ record }) => ended(record.status) && now - endedAt(record, now) > bound);
    let forgot = 0;
    for (let i = 0; i < old.length; i += 8) {
      const done = await Promise.all(old.slice(i, i + 8).map((a) => this.#o.reader.azure.remove(a.name, a.version)));
      forgot += done.filter(Boolean).length;
    }
    if (forgot > 0)
      this.#o.logger.info(
        { forgot, afterSeconds: this.#o.config.forgetEndedAfterSeconds },
        `relay: ${forgot} of Azure's records of events that ended long ago deleted`,
      );
  }

  /**
   * claim writes the finding into the record, over the version the read found: the replica whose
   * write wins says it; one that lost (another said it, or a newer report came) looks again at the next check.
   */
  async #claim(f: UnwatchedFinding, kept: KeptAzureRecord, now: number): Promise<boolean> {
    const record = kept.record;
    const at = new Date(now).toISOString();
    const next: AzureRecord = { ...record, unwatched: [...record.unwatched, { vm: f.vm, why: f.why, at, by: this.#o.replica }] };
    if ((await this.#o.reader.azure.put(kept.name, next, kept.version)) === null) return false;
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

/** TooManyEvents: reports that would add more VMs' events than one delivery may. */
export class TooManyEvents extends BridgeError<'TOO_MANY_EVENTS'> {
  constructor(added: number, max: number) {
    super(
      'TOO_MANY_EVENTS',
      `the delivery would add ${added} new events, more than azure.eventGrid.maxNewPerDelivery (${max}); nothing of it was kept`,
    );
  }
}

/** newVms: how many VMs' events a report adds to its record (all it names when there is none). */
function newVms(previous: AzureRecord | undefined, e: AzureEvent): number {
  const before = new Set(previous === undefined ? [] : vmsNamed(previous));
  return vmsNamed(e).filter((vm) => !before.has(vm)).length;
}

/** endedAt: when a record's event ended, as far as the relay can tell (a time later than now, written before times were bounded: its first sighting). */
function endedAt(r: AzureRecord, now: number): number {
  const t = Date.parse(r.updatedAt);
  return Number.isFinite(t) && t <= now ? t : Math.min(Date.parse(r.firstSeenAt), now);
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
