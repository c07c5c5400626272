/**
 * The simulator's IMDS face, as documented: 400 without `Metadata: true`, without a known
 * `api-version` or with X-Forwarded-For; 404 for unknown paths, 405 for other methods; an ETag
 * on every document and 304 for a matching If-None-Match; POST StartRequests (200 when every
 * EventId is known, 400 for a malformed body or an unknown EventId); instance compute; the
 * managed identity token endpoint (identity.ts).
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import { sendJson } from '../lib/http-server.ts';
import { applyFault, takeFault, type Fault, type FaultKind } from './faults.ts';
import { TOKEN_PATH, type ManagedIdentities } from './identity.ts';
import type { SimEvent } from './model.ts';

const API_VERSIONS = new Set([
  '2017-03-01',
  '2017-08-01',
  '2017-11-01',
  '2019-01-01',
  '2019-04-01',
  '2019-08-01',
  '2020-07-01',
  '2021-01-01',
  '2021-02-01',
  '2021-12-13',
  '2023-07-01',
]);
/** The identity endpoint's versions (2018-02-01 is what the Azure SDKs send). */
const TOKEN_API_VERSIONS = new Set(['2018-02-01', '2019-08-01', '2021-02-01', '2021-12-13', '2023-07-01']);
const MAX_LOG = 10_000;

export interface RequestLogEntry {
  at: number;
  method: string;
  path: string;
  status: number;
  fault?: FaultKind;
}

/** ImdsFace is what the IMDS face needs of the simulator. */
export interface ImdsFace {
  readonly events: SimEvent[];
  readonly faults: Fault[];
  readonly requests: RequestLogEntry[];
  readonly rawDocument: string | null;
  readonly etagEnabled: boolean;
  readonly hung: Set<ServerResponse>;
  readonly identities: ManagedIdentities;
  now(): number;
  document(): unknown;
  compute(): Record<string, string>;
  /** Starts the events (all known); false when one is not. */
  start(eventIds: string[]): boolean;
}

export async function serveImds(sim: ImdsFace, req: IncomingMessage, res: ServerResponse, url: URL, body: string): Promise<void> {
  const target =
    url.pathname === '/metadata/scheduledevents'
      ? req.method === 'POST'
        ? 'start'
        : 'scheduledevents'
      : url.pathname === '/metadata/instance/compute'
        ? 'compute'
        : url.pathname.replace(/\/$/, '') === TOKEN_PATH
          ? 'token'
          : null;
  const log = (status: number, fault?: FaultKind) => {
    if (sim.requests.length >= MAX_LOG) sim.requests.shift();
    sim.requests.push({ at: sim.now(), method: req.method ?? '', path: url.pathname, status, ...(fault ? { fault } : {}) });
  };
  if (target === null) {
    log(404);
    return sendJson(res, 404, { error: 'Not found' });
  }
  if (req.headers['metadata'] !== 'true' || req.headers['x-forwarded-for'] !== undefined) {
    log(400);
    return target === 'token'
      ? sendJson(res, 400, { error: 'invalid_request', error_description: 'Required metadata header not specified' })
      : sendJson(res, 400, { error: 'Bad request. Required metadata header not specified' });
  }
  const version = url.searchParams.get('api-version');
  if (version === null || !(target === 'token' ? TOKEN_API_VERSIONS : API_VERSIONS).has(version)) {
    log(400);
    return sendJson(res, 400, { error: 'Bad request. api-version is invalid or was not specified in the request.' });
  }
  const allowed = target === 'compute' || target === 'token' ? ['GET'] : ['GET', 'POST'];
  if (!allowed.includes(req.method ?? '')) {
    log(405);
    return sendJson(res, 405, { error: 'Method not allowed' });
  }
  const fault = takeFault(sim.faults, target);
  if (fault !== null && (await applyFault(fault, res, () => JSON.stringify(sim.document()), sim.hung))) {
    log(fault.kind === 'status' ? (fault.status ?? 500) : 0, fault.kind);
    return;
  }
  if (target === 'token') {
    const [status, answer] = sim.identities.answer(url.searchParams, sim.now());
    log(status);
    return sendJson(res, status, answer);
  }
  if (target === 'compute') {
    log(200);
    return sendJson(res, 200, sim.compute());
  }
  if (target === 'start') {
    const status = startRequests(sim, body);
    log(status);
    return status === 200 ? sendJson(res, 200, {}) : sendJson(res, 400, { error: 'Bad request' });
  }
  const text = sim.rawDocument ?? JSON.stringify(sim.document());
  const etag = `"${createHash('sha1').update(text).digest('hex').slice(0, 16)}"`;
  if (sim.etagEnabled && req.headers['if-none-match'] === etag) {
    log(304);
    res.writeHead(304, { etag });
    return void res.end();
  }
  log(200);
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', ...(sim.etagEnabled ? { etag } : {}) });
  res.end(text);
}

const StartBody = z.strictObject({ StartRequests: z.array(z.looseObject({ EventId: z.string().min(1) })).min(1) });

function startRequests(sim: ImdsFace, body: string): number {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return 400;
  }
  const shape = StartBody.safeParse(parsed);
  if (!shape.success) return 400;
  return sim.start(shape.data.StartRequests.map((r) => r.EventId)) ? 200 : 400;
}
