/**
 * ImdsSimulator is a real HTTP server that behaves like the Scheduled Events endpoint as
 * documented, for the demo, for tests and for pointing any client at. Its parts: the event
 * model (model.ts), faults (faults.ts), the IMDS face (imds-http.ts) and the control API
 * (control-api.ts); this file holds the state and the server:
 *
 * - 400 without `Metadata: true`, without a known `api-version`, or with X-Forwarded-For;
 *   404 for unknown paths, 405 for other methods;
 * - an ETag on every document and 304 for a matching If-None-Match;
 * - DocumentIncarnation increases on every change;
 * - POST StartRequests: 200 when every EventId is known (Scheduled ones start at once),
 *   400 for a malformed body or an unknown EventId;
 * - NotBefore expiry starts an event by itself; a Started event disappears after its time;
 * - `/metadata/instance/compute` answers who the VM is;
 * - `/metadata/identity/oauth2/token` issues managed identity tokens (identity.ts);
 * - a control API under `/_sim/` loads scenarios, edits events, sets raw documents and
 *   injects faults (the next N answers 4xx/5xx, slow, garbage, truncated, reset, hang).
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { http } from '../lib/node-http.ts';
import type { Socket } from 'node:net';
import { readBounded, text } from '../lib/http-body.ts';
import { baseUrl, listen, sendJson, trackSockets } from '../lib/http-server.ts';
import { serveControl } from './control-api.ts';
import { FaultSpec, type Fault } from './faults.ts';
import { ManagedIdentities } from './identity.ts';
import { serveImds, type RequestLogEntry } from './imds-http.ts';
import { AddEventSpec, advance, newSimEvent, renderCompute, renderDocument, type SimEvent } from './model.ts';
import { findScenario, scaled, type ResourceRef, type ScenarioEventSpec, type Timing } from './scenarios.ts';

export { FAULT_KINDS, type FaultKind, type FaultSpec } from './faults.ts';
export type { RequestLogEntry } from './imds-http.ts';
export { formatNotBefore, type AddEventSpec, type SimEvent } from './model.ts';

const MAX_BODY = 1024 * 1024;

export interface SimulatorOptions {
  vmName?: string;
  /** The resource group in the VM's resource id (Azure allows Unicode and spaces in it). */
  resourceGroup?: string;
  peers?: string[];
  timing?: Timing;
  /** Offer ETags and answer 304 (default true). */
  etag?: boolean;
  /** How often lifecycle timers are checked (ms). */
  tickMs?: number;
  now?: () => number;
}

export class ImdsSimulator {
  readonly vmName: string;
  readonly resourceGroup: string;
  readonly peers: string[];
  timing: Timing;
  etagEnabled: boolean;
  incarnation = 1;
  events: SimEvent[] = [];
  readonly faults: Fault[] = [];
  readonly requests: RequestLogEntry[] = [];
  readonly startRequests: { at: number; eventIds: string[] }[] = [];
  /** Which scenario each EventId it ever served came from (an event may change its id). */
  readonly scenarioOfEvent = new Map<string, string>();
  /** A raw body served instead of the live document (for malformed or hand-made documents). */
  rawDocument: string | null = null;
  /** The VM's managed identities and the token requests they answered. */
  readonly identities: ManagedIdentities;
  /** Answers held open by a `hang` fault, until close. */
  readonly hung = new Set<ServerResponse>();
  readonly #now: () => number;
  readonly #server: Server;
  readonly #sockets: Set<Socket>;
  #timer: NodeJS.Timeout | null = null;
  readonly #tickMs: number;
  #changeListeners: ((incarnation: number) => void)[] = [];

  constructor(options: SimulatorOptions = {}) {
    this.vmName = options.vmName ?? 'sim-vm-0';
    this.resourceGroup = options.resourceGroup ?? 'demo-rg';
    this.peers = options.peers ?? ['sim-vm-1', 'sim-vm-2'];
    this.timing = options.timing ?? 'dev';
    this.etagEnabled = options.etag ?? true;
    this.#tickMs = options.tickMs ?? 50;
    this.#now = options.now ?? Date.now;
    this.identities = new ManagedIdentities(renderCompute(this.vmName, this.resourceGroup).resourceId!);
    this.#server = http.createServer({ requestTimeout: 0, headersTimeout: 10_000, keepAliveTimeout: 5000 }, (req, res) => {
      this.#handle(req, res).catch((err: unknown) => {
        if (!res.headersSent) sendJson(res, 500, { error: { code: 'SIM_INTERNAL', message: String(err) } });
      });
    });
    this.#sockets = trackSockets(this.#server);
  }

  /** listen starts serving; port 0 picks a free port. Returns the base URL. */
  async listen(port = 0, host = '127.0.0.1'): Promise<string> {
    await listen(this.#server, host, port);
    this.#timer = setInterval(() => this.tick(), this.#tickMs);
    this.#timer.unref();
    return this.url;
  }

  get url(): string {
    return baseUrl(this.#server);
  }

  async close(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    for (const res of this.hung) res.destroy();
    for (const s of this.#sockets) s.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  /** onChange registers a listener called with the new incarnation after every change. */
  onChange(listener: (incarnation: number) => void): void {
    this.#changeListeners.push(listener);
  }

  now(): number {
    return this.#now();
  }

  /** tick moves events along their lifecycle: NotBefore reached starts them, Started ones end, canceled ones go. */
  tick(): void {
    const now = this.#now();
    const { keep, changed } = advance(this.events, now, (e) => this.#start(e, now));
    if (changed) {
      this.events = keep;
      this.#changed();
    }
  }

  addEvent(spec: AddEventSpec, scenario: string | null = null): SimEvent {
    const event = newSimEvent(AddEventSpec.parse(spec), this.vmName, scenario, this.#now());
    if (scenario !== null) this.scenarioOfEvent.set(event.eventId, scenario);
    this.rawDocument = null;
    this.events.push(event);
    this.#changed();
    return event;
  }

  removeEvent(eventId: string): boolean {
    const before = this.events.length;
    this.events = this.events.filter((e) => e.eventId !== eventId);
    if (this.events.length === before) return false;
    this.#changed();
    return true;
  }

  startEvent(eventId: string): boolean {
    const e = this.events.find((x) => x.eventId === eventId);
    if (e === undefined) return false;
    if (e.status === 'Scheduled') {
      this.#start(e, this.#now());
      this.#dropEnded();
      this.#changed();
    }
    return true;
  }

  /** start answers StartRequests: false (400) unless every EventId is known; Scheduled ones start at once. */
  start(eventIds: string[]): boolean {
    if (!eventIds.every((id) => this.events.some((e) => e.eventId === id))) return false;
    this.startRequests.push({ at: this.#now(), eventIds });
    let changed = false;
    for (const id of eventIds) {
      const e = this.events.find((x) => x.eventId === id)!;
      if (e.status === 'Scheduled') {
        this.#start(e, this.#now());
        changed = true;
      }
    }
    if (changed) {
      this.#dropEnded();
      this.#changed();
    }
    return true;
  }

  /** playScenario adds a scenario's events now; returns their EventIds. */
  playScenario(name: string, timing: Timing = this.timing): string[] {
    const scenario = findScenario(name);
    if (scenario === undefined) throw new Error(`unknown scenario ${name}`);
    const ids: string[] = [];
    for (const spec of scenario.events) {
      const e = this.addEvent(this.#specToEvent(spec, timing), scenario.name);
      if (spec.cancelAfterSec !== undefined) e.cancelAt = this.#now() + scaled(spec.cancelAfterSec, timing);
      if (spec.rescheduleAfterSec !== undefined) {
        e.rescheduleAt = this.#now() + scaled(spec.rescheduleAfterSec, timing);
        e.rescheduleNoticeMs = scaled(spec.rescheduleNoticeSec ?? 0, timing);
      }
      ids.push(e.eventId);
    }
    return ids;
  }

  #specToEvent(spec: ScenarioEventSpec, timing: Timing): AddEventSpec {
    return {
      EventType: spec.type,
      EventStatus: spec.appearsStarted ? 'Started' : 'Scheduled',
      Resources: spec.resources.map((r) => this.#resolve(r)),
      EventSource: spec.source,
      Description: spec.description,
      DurationInSeconds: spec.durationSeconds,
      noticeMs: scaled(spec.noticeSec, timing),
      startedMs: scaled(spec.startedSec, timing),
      notBeforeFormat: spec.notBeforeFormat ?? 'rfc1123',
      newIdPerState: spec.newIdPerState ?? false,
    };
  }

  #resolve(r: ResourceRef): string {
    if (r === 'self') return this.vmName;
    if (r === 'peer') return this.peers[0] ?? 'sim-vm-1';
    if (r === 'other') return this.peers[1] ?? 'sim-vm-2';
    return r.name;
  }

  injectFault(spec: FaultSpec): void {
    this.faults.push(FaultSpec.parse(spec));
  }

  clearFaults(): void {
    this.faults.length = 0;
  }

  /** setRawDocument serves `body` verbatim (any text) until the next change or reset. */
  setRawDocument(body: string): void {
    this.rawDocument = body;
    this.#notify();
  }

  setIncarnation(value: number): void {
    this.incarnation = value;
    this.#notify();
  }

  reset(): void {
    this.events = [];
    this.faults.length = 0;
    this.rawDocument = null;
    this.#changed();
  }

  /** document renders the current document exactly as IMDS would. */
  document(): { DocumentIncarnation: number; Events: Record<string, unknown>[] } {
    return renderDocument(this.events, this.incarnation);
  }

  compute(): Record<string, string> {
    return renderCompute(this.vmName, this.resourceGroup);
  }

  /** dropEnded removes at once the events started with no Started window (startedMs 0): no read can see them Started. */
  #dropEnded(): void {
    this.events = this.events.filter((e) => !(e.status === 'Started' && e.startedMs === 0));
  }

  #start(e: SimEvent, now: number): void {
    e.status = 'Started';
    e.notBefore = null;
    e.startedAt = now;
    if (e.newIdPerState) {
      e.eventId = randomUUID().toUpperCase();
      if (e.scenario !== null) this.scenarioOfEvent.set(e.eventId, e.scenario);
    }
  }

  #changed(): void {
    this.incarnation += 1;
    this.#notify();
  }

  #notify(): void {
    for (const l of this.#changeListeners) l(this.incarnation);
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://sim.invalid');
    const body = text(await readBounded(req, MAX_BODY, 'destroy'));
    if (url.pathname.startsWith('/_sim/') || url.pathname === '/_sim') return serveControl(this, req, res, url, body);
    return serveImds(this, req, res, url, body);
  }
}
