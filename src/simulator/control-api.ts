/**
 * The simulator's control API under `/_sim/`, as a route table: load scenarios, add, start
 * and remove events, serve a raw document, set the incarnation, inject and clear faults,
 * reset, and read the state and the request log back.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import { sendJson } from '../lib/http-server.ts';
import { FaultSpec } from './faults.ts';
import { IdentitySettings, type ManagedIdentities } from './identity.ts';
import type { RequestLogEntry } from './imds-http.ts';
import { AddEventSpec, type SimEvent } from './model.ts';
import { findScenario, SCENARIOS, type Timing } from './scenarios.ts';
import { messageOf } from '../lib/errors.ts';

/** Control is what the control API needs of the simulator. */
export interface Control {
  readonly incarnation: number;
  readonly events: SimEvent[];
  readonly faults: readonly unknown[];
  readonly requests: RequestLogEntry[];
  readonly startRequests: readonly unknown[];
  readonly rawDocument: string | null;
  readonly identities: ManagedIdentities;
  document(): unknown;
  playScenario(name: string, timing?: Timing): string[];
  addEvent(spec: z.input<typeof AddEventSpec>): SimEvent;
  removeEvent(eventId: string): boolean;
  startEvent(eventId: string): boolean;
  setRawDocument(body: string): void;
  setIncarnation(value: number): void;
  injectFault(spec: z.input<typeof FaultSpec>): void;
  clearFaults(): void;
  reset(): void;
}

type Answer = [status: number, body: unknown];
type Handler = (sim: Control, body: unknown, params: string[]) => Answer;

const bad = (message: string): Answer => [400, { error: { code: 'SIM_BAD_REQUEST', message } }];
const noEvent: Answer = [404, { error: { code: 'SIM_UNKNOWN_EVENT', message: 'no such event' } }];
const issues = (e: z.ZodError): string => e.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');

const ScenarioBody = z.strictObject({ name: z.string(), timing: z.enum(['dev', 'real']).optional() });
const DocumentBody = z.union([z.strictObject({ body: z.string() }), z.strictObject({ document: z.unknown() })]);
const IncarnationBody = z.strictObject({ value: z.number().int() });

const ROUTES: readonly { method: string; path: RegExp; handle: Handler }[] = [
  {
    method: 'GET',
    path: /^\/state$/,
    handle: (sim) => [
      200,
      {
        incarnation: sim.incarnation,
        events: sim.events,
        document: sim.document(),
        rawDocument: sim.rawDocument,
        faults: sim.faults,
        startRequests: sim.startRequests,
        requestCount: sim.requests.length,
      },
    ],
  },
  { method: 'GET', path: /^\/requests$/, handle: (sim) => [200, sim.requests] },
  { method: 'GET', path: /^\/identity$/, handle: (sim) => [200, identityState(sim.identities)] },
  {
    method: 'POST',
    path: /^\/identity$/,
    handle: (sim, body) => {
      const p = IdentitySettings.safeParse(body);
      if (!p.success) return bad(issues(p.error));
      sim.identities.configure(p.data);
      return [200, identityState(sim.identities)];
    },
  },
  { method: 'GET', path: /^\/scenarios$/, handle: () => [200, SCENARIOS.map((s) => ({ name: s.name, title: s.title }))] },
  {
    method: 'POST',
    path: /^\/scenario$/,
    handle: (sim, body) => {
      const p = ScenarioBody.safeParse(body);
      if (!p.success) return bad('expected {"name": "<scenario>", "timing"?: "dev" | "real"}');
      if (findScenario(p.data.name) === undefined)
        return bad(`unknown scenario "${p.data.name}"; known: ${SCENARIOS.map((s) => s.name).join(', ')}`);
      return [200, { eventIds: sim.playScenario(p.data.name, p.data.timing) }];
    },
  },
  {
    method: 'POST',
    path: /^\/events$/,
    handle: (sim, body) => {
      const p = AddEventSpec.safeParse(body);
      return p.success ? [200, sim.addEvent(p.data)] : bad(issues(p.error));
    },
  },
  {
    method: 'DELETE',
    path: /^\/events\/([^/]+)$/,
    handle: (sim, _b, [id]) => (sim.removeEvent(decodeURIComponent(id!)) ? [200, { removed: true }] : noEvent),
  },
  {
    method: 'POST',
    path: /^\/events\/([^/]+)\/start$/,
    handle: (sim, _b, [id]) => (sim.startEvent(decodeURIComponent(id!)) ? [200, { started: true }] : noEvent),
  },
  {
    method: 'POST',
    path: /^\/document$/,
    handle: (sim, body) => {
      const p = DocumentBody.safeParse(body);
      if (!p.success) return bad('expected {"body": "<raw text>"} or {"document": <json>}');
      sim.setRawDocument('body' in p.data ? p.data.body : JSON.stringify(p.data.document));
      return [200, { ok: true }];
    },
  },
  {
    method: 'POST',
    path: /^\/incarnation$/,
    handle: (sim, body) => {
      const p = IncarnationBody.safeParse(body);
      if (!p.success) return bad('expected {"value": <integer>}');
      sim.setIncarnation(p.data.value);
      return [200, { incarnation: sim.incarnation }];
    },
  },
  {
    method: 'POST',
    path: /^\/faults$/,
    handle: (sim, body) => {
      const p = FaultSpec.safeParse(body);
      if (!p.success) return bad(issues(p.error));
      sim.injectFault(p.data);
      return [200, { faults: sim.faults }];
    },
  },
  {
    method: 'DELETE',
    path: /^\/faults$/,
    handle: (sim) => {
      sim.clearFaults();
      return [200, { faults: [] }];
    },
  },
  {
    method: 'POST',
    path: /^\/reset$/,
    handle: (sim) => {
      sim.reset();
      return [200, { incarnation: sim.incarnation }];
    },
  },
];

function identityState(ids: ManagedIdentities) {
  return {
    systemAssigned: ids.systemAssigned ? ids.system : null,
    userAssigned: ids.userAssigned,
    tokenLifetimeSec: ids.tokenLifetimeSec,
    tokenRequests: ids.requests,
  };
}

export function serveControl(sim: Control, req: IncomingMessage, res: ServerResponse, url: URL, text: string): void {
  const path = url.pathname.replace(/^\/_sim/, '') || '/';
  const method = req.method ?? 'GET';
  let body: unknown = {};
  if (text.trim() !== '') {
    try {
      body = JSON.parse(text);
    } catch {
      return void sendJson(res, ...bad('body is not JSON'));
    }
  }
  for (const route of ROUTES) {
    const m = route.method === method ? route.path.exec(path) : null;
    if (m === null) continue;
    try {
      return void sendJson(res, ...route.handle(sim, body, m.slice(1)));
    } catch (err) {
      return void sendJson(res, ...bad(messageOf(err)));
    }
  }
  sendJson(res, 404, { error: { code: 'SIM_NO_ROUTE', message: `no control route ${method} ${path}` } });
}
