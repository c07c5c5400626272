/**
 * DrillClient: the IMDS client with the drill in it. Each Scheduled Events read carries the drill's
 * event (Drills.overlay), and while a drill plays or has just changed the read asks for the whole
 * document (no If-None-Match): a 304 would hide the drill's change. StartRequests for a drill are
 * never posted: the drill records the approval instead, and starts as IMDS would start it.
 */
import { ImdsClient, type ImdsClientOptions, type ScheduledEventsRead } from '../imds/client.ts';
import type { Drills } from './drills.ts';

export class DrillClient extends ImdsClient {
  readonly #drills: Drills;
  readonly #vmName: () => string;

  constructor(options: ImdsClientOptions, drills: Drills, vmName: () => string) {
    super(options);
    this.#drills = drills;
    this.#vmName = vmName;
  }

  override async getScheduledEvents(options: { etag?: string | null; signal?: AbortSignal } = {}): Promise<ScheduledEventsRead> {
    const whole = this.#drills.active || this.#drills.stale;
    const read = await super.getScheduledEvents(whole ? { ...options, etag: null } : options);
    if (read.kind !== 'document') return read;
    return { ...read, document: this.#drills.overlay(read.document, this.#vmName()) };
  }

  override async startEvents(eventIds: readonly string[], options: { signal?: AbortSignal } = {}): Promise<void> {
    const real = eventIds.filter((id) => !this.#drills.approved(id));
    if (real.length > 0) await super.startEvents(real, options);
  }
}
