/**
 * ArmClient: the relay's few calls to Azure Resource Manager (a Resource Graph query, a scheduled
 * event's acknowledgement), through the project's HTTP client with a token from the relay's
 * Entra ID credential for Resource Manager's own origin, each with a deadline. The generated
 * clients (@azure/arm-resourcegraph, @azure/arm-maintenance) would load their whole models for
 * two POSTs; this is the REST API they call.
 *
 * Every request goes to `arm.endpoint`'s origin, at a path of a fixed template: no text of a
 * record, a delivery or a request is ever resolved against it (a typed resource, its segments
 * encoded; see azure/resource-id.ts), and a path that would leave the origin is refused before
 * the token is asked for.
 * https://github.com/Azure/azure-rest-api-specs/tree/main/specification/maintenance/resource-manager/Microsoft.Maintenance
 */
import { readFileSync } from 'node:fs';
import type { TokenCredential } from '@azure/core-auth';
import { createCredential } from '../azure/credentials.ts';
import { isEventId, scheduledEventsPath, type EventResource } from '../azure/resource-id.ts';
import { BridgeError, messageOf } from '../lib/errors.ts';
import { HttpClient } from '../lib/http-client.ts';
import { withDeadline } from '../lib/time.ts';
import type { AzureFeedConfig } from './fleet-config.ts';

/** The api-version of Microsoft.Maintenance's scheduled events acknowledgement: the stable one (one event, or a list of one resource's). */
export const ACKNOWLEDGE_API = '2025-11-01';

export interface ArmAnswer {
  readonly status: number;
  /** The body as JSON (null when it is not JSON). */
  readonly json: unknown;
  /** What an error body says (`{error: {code, message}}`), or the start of the body. */
  readonly error: string;
  /** The ARM error code, when the body has one. */
  readonly code: string | null;
  /** Seconds to wait, when a 429 or 5xx says (Retry-After in seconds), else null. */
  readonly retryAfter: number | null;
}

/** NotSent: a call that failed before anything was sent to Resource Manager (no token, a path refused): it cannot have been taken. */
export class NotSent extends BridgeError {
  constructor(message: string) {
    super('ARM_UNAVAILABLE', message);
  }
}

export class ArmClient {
  readonly #arm: AzureFeedConfig['arm'];
  readonly #http: HttpClient;
  #credential: Promise<TokenCredential> | null = null;

  constructor(arm: AzureFeedConfig['arm']) {
    this.#arm = arm;
    const ca = arm.caFile === undefined ? undefined : readFileSync(arm.caFile, 'utf8');
    this.#http = new HttpClient({ proxy: 'env', maxSockets: 4, ...(ca === undefined ? {} : { ca }) });
  }

  /**
   * post: one POST to Resource Manager (`path` from its root, one of the fixed templates), within
   * timeoutMs. Network failures throw; a path that would leave the endpoint's origin, or no token,
   * throws NotSent.
   */
  async post(path: string, body: string, signal?: AbortSignal): Promise<ArmAnswer> {
    const origin = new URL(this.#arm.endpoint).origin;
    const url = new URL(path, origin);
    if (!path.startsWith('/') || path.startsWith('//') || url.origin !== origin || `${url.pathname}${url.search}` !== path)
      throw new NotSent(`refused to send a request to ${JSON.stringify(path)}: not a path of Resource Manager's origin`);
    // the token has a deadline of its own: the request's starts once it is had
    const authorization = `Bearer ${await this.#token()}`;
    const deadline = AbortSignal.timeout(this.#arm.timeoutMs);
    const res = await this.#http.request(url, {
      method: 'POST',
      headers: { authorization, 'content-type': 'application/json' },
      body,
      signal: signal === undefined ? deadline : AbortSignal.any([signal, deadline]),
      maxBodyBytes: 16 * 1024 * 1024,
      onOverflow: 'destroy',
    });
    const text = res.bytes.toString('utf8');
    let json: unknown = null;
    try {
      json = JSON.parse(text);
    } catch {
      // not JSON: said by its start
    }
    const e = (json as { error?: { code?: unknown; message?: unknown } } | null)?.error;
    const code = typeof e?.code === 'string' ? e.code : null;
    const error = e === undefined ? text.slice(0, 200) : `${code ?? ''} ${typeof e.message === 'string' ? e.message : ''}`.trim();
    const wait = Number(res.headers['retry-after']);
    return { status: res.status, json, error, code, retryAfter: Number.isInteger(wait) && wait >= 0 ? Math.min(wait, 3600) : null };
  }

  /**
   * acknowledge approves scheduled events of one resource (a VM, or a scale set) through
   * Microsoft.Maintenance: one event at its own `acknowledge` path, several in one call of the
   * list form (`{"value": [EventIds]}`). Resource Manager answers 200 `{"value": "Successfully Approved"}`.
   */
  acknowledge(resource: EventResource, eventIds: readonly string[], signal?: AbortSignal): Promise<ArmAnswer> {
    if (eventIds.length === 0 || !eventIds.every(isEventId)) throw new Error('acknowledge takes one or more EventIds (GUIDs)');
    const events = scheduledEventsPath(resource);
    const api = `?api-version=${ACKNOWLEDGE_API}`;
    if (eventIds.length === 1) return this.post(`${events}/${encodeURIComponent(eventIds[0]!)}/acknowledge${api}`, '', signal);
    return this.post(`${events}${api}`, JSON.stringify({ value: eventIds }), signal);
  }

  close(): void {
    this.#http.close();
  }

  async #token(): Promise<string> {
    this.#credential ??= createCredential(this.#arm.credential ?? { kind: 'managedIdentity' });
    const scope = `${new URL(this.#arm.endpoint).origin}/.default`;
    // the credential is told of the deadline, and held to it: a managed identity endpoint that never answers may not hold the approval
    const ms = this.#arm.timeoutMs;
    const deadline = AbortSignal.timeout(ms);
    const late = () => new NotSent(`no token for Resource Manager within ${ms} ms`);
    const asked = (await this.#credential).getToken(scope, { abortSignal: deadline });
    const t = await withDeadline(asked, ms, late).catch((err: unknown) => {
      // a credential that heeds the deadline gives up at it: said as the deadline, whichever came first
      throw err instanceof NotSent ? err : deadline.aborted ? late() : new NotSent(`no token for Resource Manager: ${messageOf(err)}`);
    });
    if (t === null) throw new NotSent('no token for Resource Manager');
    return t.token;
  }
}
