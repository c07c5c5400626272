/**
 * ArmClient: the relay's few calls to Azure Resource Manager (a Resource Graph query, a scheduled
 * event's acknowledgement), through the project's HTTP client with a token from the relay's
 * Entra ID credential for Resource Manager's own origin, each with a deadline. The generated
 * clients (@azure/arm-resourcegraph, @azure/arm-maintenance) would load their whole models for
 * two POSTs; this is the REST API they call.
 */
import { readFileSync } from 'node:fs';
import type { TokenCredential } from '@azure/core-auth';
import { createCredential } from '../azure/credentials.ts';
import { HttpClient } from '../lib/http-client.ts';
import type { AzureFeedConfig } from './fleet-config.ts';

/** The api-version of Microsoft.Maintenance's scheduled events acknowledgement. */
export const ACKNOWLEDGE_API = '2023-10-01-preview';

export interface ArmAnswer {
  readonly status: number;
  /** The body as JSON (null when it is not JSON). */
  readonly json: unknown;
  /** What an error body says (`{error: {code, message}}`), or the start of the body. */
  readonly error: string;
  /** The ARM error code, when the body has one. */
  readonly code: string | null;
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

  /** post: one POST to Resource Manager (`path` from its root), within timeoutMs. Network failures throw. */
  async post(path: string, body: string, signal?: AbortSignal): Promise<ArmAnswer> {
    const deadline = AbortSignal.timeout(this.#arm.timeoutMs);
    const res = await this.#http.request(new URL(path, this.#arm.endpoint), {
      method: 'POST',
      headers: { authorization: `Bearer ${await this.#token()}`, 'content-type': 'application/json' },
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
    return { status: res.status, json, error, code };
  }

  /** acknowledge approves a scheduled event of a VM (or scale set) through Microsoft.Maintenance. */
  acknowledge(resourceId: string, eventId: string, signal?: AbortSignal): Promise<ArmAnswer> {
    const path = `${resourceId}/providers/Microsoft.Maintenance/scheduledevents/${encodeURIComponent(eventId)}/acknowledge?api-version=${ACKNOWLEDGE_API}`;
    return this.post(path, '{}', signal);
  }

  close(): void {
    this.#http.close();
  }

  async #token(): Promise<string> {
    this.#credential ??= createCredential(this.#arm.credential ?? { kind: 'managedIdentity' });
    const scope = `${new URL(this.#arm.endpoint).origin}/.default`;
    const t = await (await this.#credential).getToken(scope, { abortSignal: AbortSignal.timeout(this.#arm.timeoutMs) });
    if (t === null) throw new Error('no token for Resource Manager');
    return t.token;
  }
}
