/**
 * ImdsTokens: the VM's managed identity tokens, asked of IMDS's token endpoint directly
 * (`GET /metadata/identity/oauth2/token?api-version=2018-02-01&resource=…`, `Metadata: true`),
 * as Azure documents it, on the project's HTTP client: no proxy, a deadline on every request.
 * It serves every `credential: {kind: managedIdentity}`: the fleet budget's Blob store, and, as
 * a TokenCredential (imdsCredential), the sinks' Entra ID tokens, the Azure messaging clients and
 * Resource Manager's client; the SDK's credential chain (@azure/identity and MSAL) costs about
 * 20 MiB resident for that call (docs/performance.md) and sends on Node's own HTTP client.
 * `credential: {kind: default}` still goes through @azure/identity.
 *
 * A token is kept until 5 minutes before it expires (or half its life, if shorter), and
 * concurrent callers share one request. IMDS's transient answers (404 while the identity is
 * being assigned, 410, 429, 5xx) and network failures are tried again, up to 4 tries with
 * backoff, within the caller's deadline. A 400 (no such identity on this VM) is said at once.
 */
import type { AccessToken, GetTokenOptions, TokenCredential } from '@azure/core-auth';
import { BridgeError } from '../lib/errors.ts';
import { HttpClient } from '../lib/http-client.ts';
import { IMDS_ENDPOINT } from '../imds/client.ts';

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
  readonly expiresAt: number;
}

/** The VM's managed identity (credentials.ts, kind managedIdentity): system-assigned, or a user-assigned one by one of these. */
interface ManagedIdentity {
  readonly kind: 'managedIdentity';
  readonly clientId?: string | undefined;
  readonly objectId?: string | undefined;
  readonly resourceId?: string | undefined;
}

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
    return (await this.#token(resource, signal)).token;
  }

  /**
   * accessToken: the same, as a TokenCredential gives it: when it expires, and when it is renewed
   * if it is kept at all (a token of less than 5 minutes is not: its holder renews it by its expiry).
   */
  async accessToken(resource: string, signal?: AbortSignal): Promise<AccessToken> {
    const held = await this.#token(resource, signal);
    const kept = held.renewAt > Date.now() ? { refreshAfterTimestamp: held.renewAt } : {};
    return { token: held.token, expiresOnTimestamp: held.expiresAt, tokenType: 'Bearer', ...kept };
  }

  async #token(resource: string, signal: AbortSignal | undefined): Promise<Held> {
    const held = this.#held.get(resource);
    if (held !== undefined && Date.now() < held.renewAt) return held;
    let asking = this.#asking.get(resource);
    if (asking === undefined) {
      asking = this.#ask(resource, signal).finally(() => this.#asking.delete(resource));
      this.#asking.set(resource, asking);
    }
    const got = await asking;
    this.#held.set(resource, got);
    return got;
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
  return { token: body.access_token, renewAt: now + Math.max(0, Math.min(life - EARLY_MS, life / 2)), expiresAt };
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

/**
 * imdsCredential: the VM's managed identity as the Azure SDKs take a credential (TokenCredential),
 * its tokens from ImdsTokens. A `.default` scope names the resource it is for; a failure is a
 * CredentialUnavailableError, as @azure/identity names it, with IMDS's answer as its cause.
 */
export function imdsCredential(identity: ManagedIdentity): TokenCredential {
  const tokens = new ImdsTokens(identity);
  return {
    async getToken(scopes: string | string[], options?: GetTokenOptions): Promise<AccessToken> {
      const scope = typeof scopes === 'string' ? [scopes] : scopes;
      if (scope.length !== 1) throw unavailable(`a managed identity token is for one scope, not ${scope.length}`);
      const resource = scope[0]!.replace(/\/\.default$/, '');
      try {
        return await tokens.accessToken(resource, signalOf(options?.abortSignal));
      } catch (err) {
        throw unavailable((err as Error).message, err);
      }
    },
  };
}

/** signalOf: the SDK's abort signal as a DOM one (the SDKs on Node pass one already). */
function signalOf(like: GetTokenOptions['abortSignal']): AbortSignal | undefined {
  if (like === undefined || like instanceof AbortSignal) return like;
  const controller = new AbortController();
  if (like.aborted) controller.abort();
  else like.addEventListener('abort', () => controller.abort(), { once: true });
  return controller.signal;
}

function unavailable(message: string, cause?: unknown): Error {
  const err = new Error(message, cause === undefined ? undefined : { cause });
  err.name = 'CredentialUnavailableError';
  return err;
}
