/**
 * DigestPoster: the chat digest (`digest`) said once per period however many relay replicas run.
 * Which message says the period's digest is kept in one record of the fleet's store, sealed with
 * the relay's record key (every member may write the store; none holds the key, so a member can
 * neither point the relay's bot at another message nor stop the digest by claiming its period).
 *
 * At each look (every `checkSeconds`), a replica reads that record (one GET) and the fleet (the
 * relay's shared read). The first look of a period posts a new message to every sink; a later one
 * updates in place the messages that can be (Slack's, by chat.update) when what the digest says
 * changed. Every change of the record is a conditional write, and only the replica whose write
 * won calls the chat: a replica that loses leaves it to the winner. While the winner posts, the
 * record says until when (`busyUntil`), so nobody posts the period twice; a sink that could not be
 * said to is tried again at the next look.
 */
import type { Logger } from 'pino';
import { z } from 'zod';
import { errorFields, messageOf } from '../lib/errors.ts';
import { deadline, sleep } from '../lib/time.ts';
import type { FleetStore } from '../fleet/budget/stores/port.ts';
import { digestOf } from '../fleet/view/digest.ts';
import { fleetEvents, type UnwatchedRules } from '../fleet/view/events.ts';
import { RecordSeal } from '../fleet/view/seal.ts';
import { AZURE_GROUP } from '../fleet/budget/config.ts';
import { openFleetStore } from '../fleet/budget/stores/open.ts';
import type { RelayConfig } from './config.ts';
import type { RelaySinks } from './sinks.ts';
import type { FleetReader, FleetSnapshot } from '../fleet/view/snapshot.ts';
import type { FleetDigest } from '../present/digest.ts';
import type { Sink } from '../sinks/contract.ts';
import type { DigestConfig } from './digest-config.ts';

/** The record's name, in the relay's own part of the store (beside Azure's records). */
export const DIGEST_RECORD = 'digest';

const DigestRecordSchema = z.object({
  /** How many times it was written: a replica keeps the newest it knew, so a record replayed by a member reads as old. */
  seq: z.number().int().min(0),
  /** The period it is of (minutes since the epoch over everyMinutes). */
  period: z.number().int().min(0),
  /** What its messages say (FleetDigest.key), null when one of them could not be updated. */
  key: z.string().max(64).nullable(),
  /** When the fleet it says was read (epoch ms): an older read never overwrites a newer. */
  readAt: z.number().int().min(0),
  /** A replica is saying it until then (epoch ms). */
  busyUntil: z.number().int().min(0),
  by: z.string().max(200),
  /** Each sink it was said to, and its message (null: one that cannot be updated). */
  refs: z.record(z.string().max(100), z.string().max(400).nullable()),
});
type DigestRecord = z.infer<typeof DigestRecordSchema>;

/** A chat sink of the relay's, with how long one call to it may take. */
export interface ChatSink {
  readonly name: string;
  readonly sink: Sink;
  readonly timeoutMs: number;
}

export interface DigestPosterOptions {
  readonly config: DigestConfig;
  readonly reader: FleetReader;
  /** The relay's part of the store (AZURE_GROUP), where the record lives. */
  readonly store: FleetStore;
  readonly seal: RecordSeal;
  readonly sinks: readonly ChatSink[];
  readonly rules: UnwatchedRules;
  readonly logger: Logger;
  /** Who writes (the replica), for the record. */
  readonly by: string;
  readonly onSaid?: (sink: string, result: 'posted' | 'updated' | 'failed') => void;
  readonly now?: () => number;
}

/** What one look did: posted a new message, updated it, or nothing (and why), with each sink's result. */
export interface DigestLook {
  readonly did: 'posted' | 'updated' | 'unchanged' | 'busy' | 'another';
  readonly digest: FleetDigest;
  readonly sinks: readonly { readonly name: string; readonly result: 'posted' | 'updated' | 'failed'; readonly why?: string }[];
}

/** fleetDigest: the digest of a read of the store as the relay's `digest` says it (its hours, the console's address). */
export const fleetDigest = (snapshot: FleetSnapshot, config: DigestConfig, rules: UnwatchedRules, now: number): FleetDigest =>
  digestOf(snapshot, fleetEvents(snapshot, rules, now), now, { hours: config.hours, consoleUrl: config.consoleUrl ?? null });

/** digestPoster: the relay's digest, when `digest` is configured: its record's part of the store opened (nothing requested yet). */
export async function digestPoster(
  config: RelayConfig,
  parts: { readonly reader: FleetReader; readonly sinks: RelaySinks; readonly logger: Logger; readonly by: string },
  onSaid?: DigestPosterOptions['onSaid'],
): Promise<DigestPoster | null> {
  const d = config.digest;
  if (d === undefined || config.fleet === undefined || config.digestKey === null) return null;
  const store = await openFleetStore(config.fleet.store, AZURE_GROUP, config.fleet.storeTimeoutMs);
  return new DigestPoster({
    ...{ config: d, reader: parts.reader, store, seal: new RecordSeal(config.digestKey), sinks: parts.sinks.chat(d.sinks) },
    ...{ rules: { afterSeconds: config.azure?.unwatchedAfterSeconds }, logger: parts.logger.child({ part: 'digest' }), by: parts.by },
    ...(onSaid ? { onSaid } : {}),
  });
}

export class DigestPoster {
  readonly #o: DigestPosterOptions;
  readonly #now: () => number;
  /** The newest record this replica read or wrote: what it trusts when the store's reads as none, or as older. */
  #known: DigestRecord | null = null;
  /** The store's version of the record as this replica first saw it, on its own clock (a claim's end is another's clock). */
  #sighted: { readonly version: string; readonly at: number } | null = null;

  constructor(o: DigestPosterOptions) {
    this.#o = o;
    this.#now = o.now ?? Date.now;
  }

  close(): Promise<void> {
    return this.#o.store.close();
  }

  /** run: a look every checkSeconds until `signal` aborts; a look that fails is logged and the next one tries again. */
  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      try {
        await this.look('period', signal);
      } catch (err) {
        if (signal.aborted) break;
        this.#o.logger.warn({ ...errorFields(err), code: 'FLEET_STORE_UNAVAILABLE' }, `fleet digest: ${messageOf(err)}`);
      }
      await sleep(this.#o.config.checkSeconds * 1000, signal).catch(() => undefined);
    }
  }

  /**
   * look: at the schedule's pace (`period`: post at a period's start, update in place after), or
   * on demand (`now`: post a new message at once, which the period's updates then go to).
   */
  async look(mode: 'period' | 'now', signal?: AbortSignal): Promise<DigestLook> {
    const { config, reader, store, seal } = this.#o;
    const snapshot = await reader.read();
    const now = this.#now();
    const digest = fleetDigest(snapshot, config, this.#o.rules, now);
    const current = await store.get(DIGEST_RECORD, signal);
    const opened = current === null ? null : seal.openAs(DIGEST_RECORD, current.value, DigestRecordSchema);
    // a record a member wrote, removed or replayed never makes the relay post again what it knows it said
    const known = this.#known;
    const stale = known !== null && (opened === null || opened.seq < known.seq);
    const was = stale ? known : opened;
    this.#known = was;
    // a replica whose clock is behind another's never goes back to the period before
    const period = Math.max(Math.floor(now / (config.everyMinutes * 60_000)), was?.period ?? 0);
    const nothing = (did: DigestLook['did']): DigestLook => ({ did, digest, sinks: [] });
    if (current !== null && current.version !== this.#sighted?.version) this.#sighted = { version: current.version, at: now };
    const busyMs = this.#o.sinks.reduce((n, s) => n + s.timeoutMs, 5000);
    // a claim holds until its end, and for as long as it lasts since this replica first saw it, whoever's clock is ahead
    const claimed = was !== null && was.busyUntil > 0 && (was.busyUntil > now || now - (this.#sighted?.at ?? now) < busyMs);
    if (mode === 'period' && claimed) return nothing('busy');
    const fresh = mode === 'now' || was === null || was.period !== period;
    const todo = fresh
      ? this.#o.sinks.map((s) => ({ s, ref: null }))
      : this.#todo(was, digest, snapshot.readAt, snapshot.unread.length > 0);
    const seq = (was?.seq ?? 0) + 1;
    if (todo.length === 0) {
      // the store does not say what this replica knows: it says it again, for the others
      if (stale)
        await store.put(DIGEST_RECORD, seal.seal(DIGEST_RECORD, { ...was!, seq, by: this.#o.by }), current?.version ?? null, signal);
      return nothing('unchanged');
    }
    const claim: DigestRecord = {
      ...{ seq, period, key: digest.key, readAt: snapshot.readAt, busyUntil: now + busyMs, by: this.#o.by },
      refs: fresh || was === null ? {} : was.refs,
    };
    const version = await store.put(DIGEST_RECORD, seal.seal(DIGEST_RECORD, claim), current?.version ?? null, signal);
    if (version === null) return nothing('another');
    this.#known = claim;
    const refs = { ...claim.refs };
    let key: string | null = digest.key;
    const said: DigestLook['sinks'][number][] = [];
    for (const { s, ref } of todo) {
      const result = ref === null ? 'posted' : 'updated';
      const limit = deadline(s.timeoutMs, signal);
      try {
        const out = await s.sink.digest!(digest, { ref, signal: limit.signal });
        if (out.outcome.status !== 'delivered') throw new Error(out.outcome.reason);
        refs[s.name] = out.ref;
        said.push({ name: s.name, result });
        this.#o.onSaid?.(s.name, result);
      } catch (err) {
        // not said: a post is tried again at the next look, and so is an update (the key says it is not current)
        if (ref !== null) key = null;
        said.push({ name: s.name, result: 'failed', why: messageOf(err) });
        this.#o.onSaid?.(s.name, 'failed');
        this.#o.logger.error(
          { ...errorFields(err), code: 'RELAY_SINK_FAILED', sink: s.name },
          `fleet digest: could not be ${result} in ${s.name}: ${messageOf(err)}`,
        );
      } finally {
        limit.release();
      }
    }
    const done: DigestRecord = { ...claim, seq: seq + 1, key, busyUntil: 0, refs };
    // kept first: a write that fails is said again at this replica's next look
    this.#known = done;
    if ((await this.#settle(done, version, claim.busyUntil, signal)) === null)
      this.#o.logger.warn(
        { code: 'FLEET_STORE_UNAVAILABLE' },
        'fleet digest: another writer changed the record while this replica said it',
      );
    if (said.some((x) => x.result !== 'failed'))
      this.#o.logger.info(
        { digest: digest.key, total: digest.total, sinks: said.map((x) => x.name) },
        `fleet digest ${fresh ? 'posted' : 'updated'}`,
      );
    return { did: fresh ? 'posted' : 'updated', digest, sinks: said };
  }

  /**
   * settle: the record of what was said written over the claim, tried again while the claim holds
   * (a store that failed once must not leave the claim to expire, and another replica to post again).
   */
  async #settle(done: DigestRecord, version: string, until: number, signal?: AbortSignal): Promise<string | null> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.#o.store.put(DIGEST_RECORD, this.#o.seal.seal(DIGEST_RECORD, done), version, signal);
      } catch (err) {
        if (attempt >= 3 || signal?.aborted || this.#now() + attempt * 250 >= until) throw err;
        await sleep(attempt * 250, signal);
      }
    }
  }

  /** todo: within the period, the sinks not said to yet, and the messages to update when what the digest says changed. */
  #todo(was: DigestRecord, digest: FleetDigest, readAt: number, unread: boolean): { s: ChatSink; ref: string | null }[] {
    const missing = this.#o.sinks.filter((s) => !Object.hasOwn(was.refs, s.name)).map((s) => ({ s, ref: null }));
    // a newer read that says something else; a read that failed never replaces what a good one said
    if (was.key === digest.key || readAt <= was.readAt || unread) return missing;
    const updates = this.#o.sinks.flatMap((s) => {
      const ref = Object.hasOwn(was.refs, s.name) ? was.refs[s.name] : null;
      return typeof ref === 'string' ? [{ s, ref }] : [];
    });
    return [...missing, ...updates];
  }
}
