/**
 * ImdsSimulator is a real HTTP server that behaves like the Scheduled Events endpoint as
 * documented (see IMDS-SCHEDULED-EVENTS.md), for the demo, for tests and for pointing any
 * client at:
 *
 * - 400 without `Metadata: true`, without a known `api-version`, or with X-Forwarded-For;
 *   404 for unknown paths, 405 for other methods;
 * - an ETag on every document and 304 for a matching If-None-Match;
 * - DocumentIncarnation increases on every change;
 * - POST StartRequests: 200 when every EventId is known (Scheduled ones start at once),
 *   400 for a malformed body or an unknown EventId;
 * - NotBefore expiry starts an event by itself; a Started event disappears after its time;
 * - `/metadata/instance/compute` answers who the VM is;
 * - a control API under `/_sim/` loads scenarios, edits events, sets raw documents and
 *   injects faults (the next N answers 4xx/5xx, slow, garbage, truncated, reset, hang).
 */
import { createHash, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { baseUrl, listen } from '../lib/http-server.ts';
import { z } from 'zod';
import { findScenario, scaled, SCENARIOS, type ResourceRef, type ScenarioEventSpec, type Timing } from './scenarios.ts';

const API_VERSIONS = new Set(['2017-03-01', '2017-08-01', '2017-11-01', '2019-01-01', '2019-04-01', '2019-08-01', '2020-07-01', '2021-01-01', '2021-02-01', '2021-12-13', '2023-07-01']);
const MAX_LOG = 10_000;

export interface SimEvent {
  eventId: string;
  eventType: string;
  status: 'Scheduled' | 'Started';
  resources: string[];
  source: string;
  description: string;
  durationSeconds: number;
  /** When the event starts by itself (ms since epoch); null once Started. */
  notBefore: number | null;
  notBeforeFormat: 'rfc1123' | 'iso8601';
  /** How long it stays Started before it disappears (ms). */
  startedMs: number;
  startedAt: number | null;
  /** When Azure cancels it while still Scheduled (ms since epoch). */
  cancelAt: number | null;
  /** When Azure moves NotBefore (ms since epoch), and to how far ahead of that moment. */
  rescheduleAt: number | null;
  rescheduleNoticeMs: number;
  scenario: string | null;
  /** Microsoft's mock server's way: each change of status gives the event a new EventId. */
  newIdPerState: boolean;
}

export const FAULT_KINDS = ['status', 'slow', 'garbage', 'truncated', 'schema', 'reset', 'hang'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

const FaultSpec = z.strictObject({
  kind: z.enum(FAULT_KINDS),
  /** How many answers the fault applies to. */
  count: z.number().int().min(1).max(1_000_000).default(1),
  /** For `status`: the HTTP status to answer. */
  status: z.number().int().min(300).max(599).optional(),
  /** For `status`: a Retry-After header in seconds. */
  retryAfterSec: z.number().int().min(0).max(3600).optional(),
  /** For `slow`: how long to wait before answering. */
  delayMs: z.number().int().min(0).max(600_000).default(2000),
  /** Which requests it applies to. */
  target: z.enum(['scheduledevents', 'start', 'compute', 'all']).default('scheduledevents'),
});
export type FaultSpec = z.input<typeof FaultSpec>;
type Fault = z.infer<typeof FaultSpec>;

const AddEventSpec = z.strictObject({
  EventId: z.string().min(1).optional(),
  EventType: z.string().min(1).default('Reboot'),
  EventStatus: z.enum(['Scheduled', 'Started']).default('Scheduled'),
  Resources: z.array(z.string()).optional(),
  EventSource: z.string().default('Platform'),
  Description: z.string().default(''),
  DurationInSeconds: z.number().int().default(-1),
  /** Milliseconds until NotBefore. */
  noticeMs: z.number().int().min(0).default(15 * 60_000),
  /** Milliseconds the event stays Started. */
  startedMs: z.number().int().min(0).default(10 * 60_000),
  notBeforeFormat: z.enum(['rfc1123', 'iso8601']).default('rfc1123'),
  /** Give the event a new EventId when it starts, as Microsoft's mock server does. */
  newIdPerState: z.boolean().default(false),
});
export type AddEventSpec = z.input<typeof AddEventSpec>;

export interface RequestLogEntry {
  at: number;
  method: string;
  path: string;
  status: number;
  fault?: FaultKind;
}

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
  readonly #now: () => number;
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  readonly #hung = new Set<ServerResponse>();
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
    this.#server = createServer({ requestTimeout: 0, headersTimeout: 10_000, keepAliveTimeout: 5000 }, (req, res) => {
      this.#handle(req, res).catch((err: unknown) => {
        if (!res.headersSent) sendJson(res, 500, { error: { code: 'SIM_INTERNAL', message: String(err) } });
      });
    });
    this.#server.on('connection', (s) => {
      this.#sockets.add(s);
      s.on('close', () => this.#sockets.delete(s));
    });
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
    for (const res of this.#hung) res.destroy();
    for (const s of this.#sockets) s.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  /** onChange registers a listener called with the new incarnation after every change. */
  onChange(listener: (incarnation: number) => void): void {
    this.#changeListeners.push(listener);
  }

  // ----- state -------------------------------------------------------------------------

  /** tick moves events along their lifecycle: NotBefore reached starts them, Started ones end, canceled ones go. */
  tick(): void {
    const now = this.#now();
    let changed = false;
    const keep: SimEvent[] = [];
    for (const e of this.events) {
      if (e.status === 'Scheduled' && e.cancelAt !== null && now >= e.cancelAt) {
        changed = true;
        continue;
      }
      if (e.status === 'Scheduled' && e.rescheduleAt !== null && now >= e.rescheduleAt) {
        e.notBefore = now + e.rescheduleNoticeMs;
        e.rescheduleAt = null;
        changed = true;
      }
      if (e.status === 'Scheduled' && e.notBefore !== null && now >= e.notBefore) {
        this.#start(e, now);
        changed = true;
      }
      if (e.status === 'Started' && e.startedAt !== null && now >= e.startedAt + e.startedMs) {
        changed = true;
        continue;
      }
      keep.push(e);
    }
    if (changed) {
      this.events = keep;
      this.#changed();
    }
  }

  addEvent(spec: AddEventSpec, scenario: string | null = null): SimEvent {
    const s = AddEventSpec.parse(spec);
    const now = this.#now();
    const event: SimEvent = {
      eventId: s.EventId ?? randomUUID().toUpperCase(),
      eventType: s.EventType,
      status: s.EventStatus,
      resources: s.Resources ?? [this.vmName],
      source: s.EventSource,
      description: s.Description,
      durationSeconds: s.DurationInSeconds,
      notBefore: s.EventStatus === 'Started' ? null : now + s.noticeMs,
      notBeforeFormat: s.notBeforeFormat,
      startedMs: s.startedMs,
      startedAt: s.EventStatus === 'Started' ? now : null,
      cancelAt: null,
      rescheduleAt: null,
      rescheduleNoticeMs: 0,
      scenario,
      newIdPerState: s.newIdPerState,
    };
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
    return {
      DocumentIncarnation: this.incarnation,
      Events: this.events.map((e) => ({
        EventId: e.eventId,
        EventStatus: e.status,
        EventType: e.eventType,
        ResourceType: 'VirtualMachine',
        Resources: [...e.resources],
        NotBefore: e.notBefore === null ? '' : formatNotBefore(e.notBefore, e.notBeforeFormat),
        Description: e.description,
        EventSource: e.source,
        DurationInSeconds: e.durationSeconds,
      })),
    };
  }

  compute(): Record<string, string> {
    return {
      name: this.vmName,
      resourceId: `/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/${this.resourceGroup}/providers/Microsoft.Compute/virtualMachines/${this.vmName}`,
      subscriptionId: '00000000-0000-0000-0000-000000000000',
      resourceGroupName: this.resourceGroup,
      vmScaleSetName: '',
      location: 'westeurope',
      zone: '1',
      vmId: '11111111-2222-3333-4444-555555555555',
      osType: 'Linux',
    };
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

  // ----- HTTP --------------------------------------------------------------------------

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://sim.invalid');
    if (url.pathname.startsWith('/_sim/') || url.pathname === '/_sim') return this.#control(req, res, url);
    const target = url.pathname === '/metadata/scheduledevents'
      ? req.method === 'POST' ? 'start' : 'scheduledevents'
      : url.pathname === '/metadata/instance/compute' ? 'compute' : null;
    const log = (status: number, fault?: FaultKind) => {
      if (this.requests.length >= MAX_LOG) this.requests.shift();
      this.requests.push({ at: this.#now(), method: req.method ?? '', path: url.pathname, status, ...(fault ? { fault } : {}) });
    };
    const body = await readBody(req);
    if (target === null) {
      log(404);
      return sendJson(res, 404, { error: 'Not found' });
    }
    if (req.headers['metadata'] !== 'true' || req.headers['x-forwarded-for'] !== undefined) {
      log(400);
      return sendJson(res, 400, { error: 'Bad request. Required metadata header not specified' });
    }
    const version = url.searchParams.get('api-version');
    if (version === null || !API_VERSIONS.has(version)) {
      log(400);
      return sendJson(res, 400, { error: 'Bad request. api-version is invalid or was not specified in the request.' });
    }
    const allowed = target === 'compute' ? ['GET'] : ['GET', 'POST'];
    if (!allowed.includes(req.method ?? '')) {
      log(405);
      return sendJson(res, 405, { error: 'Method not allowed' });
    }
    const fault = this.#takeFault(target);
    if (fault !== null) {
      const handled = await this.#applyFault(fault, res);
      if (handled) {
        log(fault.kind === 'status' ? (fault.status ?? 500) : fault.kind === 'slow' ? 200 : 0, fault.kind);
        return;
      }
    }
    if (target === 'compute') {
      log(200);
      return sendJson(res, 200, this.compute());
    }
    if (target === 'start') {
      const status = this.#startRequests(body);
      log(status);
      return status === 200 ? sendJson(res, 200, {}) : sendJson(res, 400, { error: 'Bad request' });
    }
    const text = this.rawDocument ?? JSON.stringify(this.document());
    const etag = `"${createHash('sha1').update(text).digest('hex').slice(0, 16)}"`;
    if (this.etagEnabled && req.headers['if-none-match'] === etag) {
      log(304);
      res.writeHead(304, { etag });
      return void res.end();
    }
    log(200);
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', ...(this.etagEnabled ? { etag } : {}) });
    res.end(text);
  }

  #startRequests(body: string): number {
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      return 400;
    }
    const shape = z.strictObject({ StartRequests: z.array(z.looseObject({ EventId: z.string().min(1) })).min(1) }).safeParse(parsed);
    if (!shape.success) return 400;
    const ids = shape.data.StartRequests.map((r) => r.EventId);
    if (!ids.every((id) => this.events.some((e) => e.eventId === id))) return 400;
    this.startRequests.push({ at: this.#now(), eventIds: ids });
    let changed = false;
    for (const id of ids) {
      const e = this.events.find((x) => x.eventId === id)!;
      if (e.status === 'Scheduled') {
        this.#start(e, this.#now());
        changed = true;
      }
    }
    if (changed) this.#changed();
    return 200;
  }

  #takeFault(target: string): Fault | null {
    const i = this.faults.findIndex((f) => f.target === 'all' || f.target === target);
    if (i < 0) return null;
    const f = this.faults[i]!;
    f.count -= 1;
    if (f.count <= 0) this.faults.splice(i, 1);
    return f;
  }

  /** applyFault answers with the fault; false when the normal answer should follow (slow). */
  async #applyFault(f: Fault, res: ServerResponse): Promise<boolean> {
    switch (f.kind) {
      case 'status':
        res.writeHead(f.status ?? 500, {
          'content-type': 'application/json',
          ...(f.retryAfterSec !== undefined ? { 'retry-after': String(f.retryAfterSec) } : {}),
        });
        res.end(JSON.stringify({ error: `simulated ${f.status ?? 500}` }));
        return true;
      case 'slow':
        await new Promise((r) => setTimeout(r, f.delayMs));
        return false;
      case 'garbage':
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('<html>definitely not json</html>');
        return true;
      case 'truncated': {
        const text = JSON.stringify(this.document());
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(text.slice(0, Math.max(1, Math.floor(text.length / 2))));
        return true;
      }
      case 'schema':
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ DocumentIncarnation: 'seven', Events: 'none' }));
        return true;
      case 'reset':
        res.socket?.destroy();
        return true;
      case 'hang':
        this.#hung.add(res);
        res.on('close', () => this.#hung.delete(res));
        return true;
    }
  }

  async #control(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const path = url.pathname.replace(/^\/_sim/, '') || '/';
    const method = req.method ?? 'GET';
    let body: unknown = {};
    const text = await readBody(req);
    if (text.trim() !== '') {
      try {
        body = JSON.parse(text);
      } catch {
        return badRequest(res, 'body is not JSON');
      }
    }
    const route = `${method} ${path}`;
    try {
      if (route === 'GET /state') {
        return sendJson(res, 200, {
          incarnation: this.incarnation,
          events: this.events,
          document: this.document(),
          rawDocument: this.rawDocument,
          faults: this.faults,
          startRequests: this.startRequests,
          requestCount: this.requests.length,
        });
      }
      if (route === 'GET /requests') return sendJson(res, 200, this.requests);
      if (route === 'GET /scenarios') return sendJson(res, 200, SCENARIOS.map((s) => ({ name: s.name, title: s.title })));
      if (route === 'POST /scenario') {
        const p = z.strictObject({ name: z.string(), timing: z.enum(['dev', 'real']).optional() }).safeParse(body);
        if (!p.success) return badRequest(res, 'expected {"name": "<scenario>", "timing"?: "dev" | "real"}');
        if (findScenario(p.data.name) === undefined) {
          return badRequest(res, `unknown scenario "${p.data.name}"; known: ${SCENARIOS.map((s) => s.name).join(', ')}`);
        }
        return sendJson(res, 200, { eventIds: this.playScenario(p.data.name, p.data.timing) });
      }
      if (route === 'POST /events') {
        const p = AddEventSpec.safeParse(body);
        if (!p.success) return badRequest(res, p.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; '));
        return sendJson(res, 200, this.addEvent(p.data));
      }
      const eventRoute = /^\/events\/([^/]+)(\/start)?$/.exec(path);
      if (eventRoute && method === 'DELETE' && !eventRoute[2]) {
        return this.removeEvent(decodeURIComponent(eventRoute[1]!))
          ? sendJson(res, 200, { removed: true })
          : sendJson(res, 404, { error: { code: 'SIM_UNKNOWN_EVENT', message: 'no such event' } });
      }
      if (eventRoute && method === 'POST' && eventRoute[2]) {
        return this.startEvent(decodeURIComponent(eventRoute[1]!))
          ? sendJson(res, 200, { started: true })
          : sendJson(res, 404, { error: { code: 'SIM_UNKNOWN_EVENT', message: 'no such event' } });
      }
      if (route === 'POST /document') {
        const p = z.union([z.strictObject({ body: z.string() }), z.strictObject({ document: z.unknown() })]).safeParse(body);
        if (!p.success) return badRequest(res, 'expected {"body": "<raw text>"} or {"document": <json>}');
        this.setRawDocument('body' in p.data ? p.data.body : JSON.stringify(p.data.document));
        return sendJson(res, 200, { ok: true });
      }
      if (route === 'POST /incarnation') {
        const p = z.strictObject({ value: z.number().int() }).safeParse(body);
        if (!p.success) return badRequest(res, 'expected {"value": <integer>}');
        this.setIncarnation(p.data.value);
        return sendJson(res, 200, { incarnation: this.incarnation });
      }
      if (route === 'POST /faults') {
        const p = FaultSpec.safeParse(body);
        if (!p.success) return badRequest(res, p.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; '));
        this.injectFault(p.data);
        return sendJson(res, 200, { faults: this.faults });
      }
      if (route === 'DELETE /faults') {
        this.clearFaults();
        return sendJson(res, 200, { faults: [] });
      }
      if (route === 'POST /reset') {
        this.reset();
        return sendJson(res, 200, { incarnation: this.incarnation });
      }
      return sendJson(res, 404, { error: { code: 'SIM_NO_ROUTE', message: `no control route ${route}` } });
    } catch (err) {
      return badRequest(res, String((err as Error).message));
    }
  }
}

/** formatNotBefore writes a time as IMDS does (RFC 1123) or as Microsoft's mock server does (ISO 8601). */
export function formatNotBefore(ms: number, format: 'rfc1123' | 'iso8601'): string {
  const d = new Date(ms);
  return format === 'rfc1123' ? d.toUTCString() : d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function badRequest(res: ServerResponse, message: string): void {
  sendJson(res, 400, { error: { code: 'SIM_BAD_REQUEST', message } });
}

async function readBody(req: IncomingMessage, limit = 1024 * 1024): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) break;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
