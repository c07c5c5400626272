/**
 * ImdsTokens: the VM's managed identity tokens, asked of IMDS's token endpoint directly
 * (`GET /metadata/identity/oauth2/token?api-version=2018-02-01&resource=…`, `Metadata: true`),
 * as Azure documents it, on the project's HTTP client: no proxy, a deadline on every request.
 * It serves the fleet budget's Blob store, which needs one token for one resource; the SDK's
 * credential chain (@azure/identity and MSAL) costs about 20 MiB resident for that call
 * (docs/performance.md). `credential: {kind: default}` still goes through @azure/identity.
 *
 * A token is kept until 5 minutes before it expires (or half its life, if shorter), and
 * concurrent callers share one request. IMDS's transient answers (404 while the identity is
 * being assigned, 410, 429, 5xx) and network failures are tried again, up to 4 tries with
 * backoff, within the caller's deadline. A 400 (no such identity on this VM) is said at once.
 */
import { BridgeError } from '../lib/errors.ts';
import { HttpClient } from '../lib/http-client.ts';
import { IMDS_ENDPOINT } from '../imds/client.ts';
import type { CredentialConfig } from './credentials.ts';

export const TOKEN_PATH = '/metadata/identity/oauth2/token';
const DEADLINE_MS = 10_000;
const EARLY_MS = 5 * 60_000;
const TRIES = 4;

/** A managed identity token that could not be had. */
export class ManagedIdentityError extends BridgeError<'MANAGED_IDENTITY_UNAVAILABLE'> {
  constructor(message: string, cause?: unknown) {
    super('MANAGED_IDENTITY_UNAVAILABLE', message, { cause });
  }
}

interface Held {
  readonly token: string;
  readonly renewAt: number;
}

type ManagedIdentity = Extract<CredentialConfig, { kind: 'managedIdentity' }>;

export class ImdsTokens {
  readonly #identity: ManagedIdentity;
  readonly #http = new HttpClient({ proxy: 'none', maxSockets: 1, keepAliveMs: 5000 });
  readonly #held = new Map<string, Held>();
  readonly #asking = new Map<string, Promise<Held>>();

  constructor(identity: ManagedIdentity) {
    this.#identity = identity;
  }

  /** token: a bearer token for `resource` (e.g. https://storage.azure.com). */
  async token(resource: string, signal?: AbortSignal): Promise<string> {
    const held = this.#held.get(resource);
    if (held !== undefined && Date.now() < held.renewAt) return held.token;
    let asking = this.#asking.get(resource);
    if (asking === undefined) {
      asking = this.#ask(resource, signal).finally(() => this.#asking.delete(resource));
      this.#asking.set(resource, asking);
    }
    const got = await asking;
    this.#held.set(resource, got);
    return got.token;
  }

  close(): void {
    this.#http.close();
  }

  async #ask(resource: string, outer: AbortSignal | undefined): Promise<Held> {
    const signal = AbortSignal.any([AbortSignal.timeout(DEADLINE_MS), ...(outer === undefined ? [] : [outer])]);
    const url = new URL(TOKEN_PATH, process.env.AZURE_POD_IDENTITY_AUTHORITY_HOST || IMDS_ENDPOINT);
    url.searchParams.set('api-version', '2018-02-01');
    url.searchParams.set('resource', resource);
    const id = this.#identity;
    if (id.clientId !== undefined) url.searchParams.set('client_id', id.clientId);
    if (id.objectId !== undefined) url.searchParams.set('object_id', id.objectId);
    if (id.resourceId !== undefined) url.searchParams.set('msi_res_id', id.resourceId);
    let last = '';
    for (let attempt = 1; attempt <= TRIES; attempt++) {
      try {
        const res = await this.#http.request(url, {
          method: 'GET',
          headers: { metadata: 'true' },
          signal,
          maxBodyBytes: 64 * 1024,
          onOverflow: 'destroy',
        });
        const text = res.bytes.toString('utf8');
        if (res.status === 200) return heldOf(text);
        last = `IMDS answered ${res.status}: ${describe(text)}`;
        if (res.status === 400 || res.status === 403) break;
      } catch (err) {
        if (signal.aborted)
          throw new ManagedIdentityError(`no managed identity token for ${resource} in time${last ? ` (${last})` : ''}`, err);
        if (err instanceof ManagedIdentityError) throw err;
        last = `IMDS could not be reached (${(err as { code?: string }).code ?? (err as Error).message})`;
      }
      if (attempt < TRIES) await pause(250 * 2 ** attempt, signal);
    }
    throw new ManagedIdentityError(`no managed identity token for ${resource}: ${last}`);
  }
}

function heldOf(text: string): Held {
  let body: { access_token?: unknown; expires_on?: unknown; expires_in?: unknown };
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    throw new ManagedIdentityError('IMDS answered a token that is not JSON');
  }
  if (typeof body.access_token !== 'string' || body.access_token === '') throw new ManagedIdentityError('IMDS answered no access_token');
  const now = Date.now();
  const expiresAt = Number(body.expires_on) * 1000 || now + (Number(body.expires_in) || 3600) * 1000;
  const life = Math.max(0, expiresAt - now);
  return { token: body.access_token, renewAt: now + Math.max(0, Math.min(life - EARLY_MS, life / 2)) };
}

/** describe: what IMDS said in an error body (error and error_description), short. */
function describe(text: string): string {
  try {
    const e = JSON.parse(text) as { error?: string; error_description?: string };
    return [e.error, e.error_description].filter(Boolean).join(': ').slice(0, 300) || text.slice(0, 200);
  } catch {
    return text.slice(0, 200);
  }
}

const pause = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
  });
