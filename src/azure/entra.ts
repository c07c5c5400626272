/**
 * Entra ID bearer tokens for the HTTP sinks (webhook, teams, eventgrid): the VM's managed
 * identity, or DefaultAzureCredential, asked for one scope (`api://<app>/.default`,
 * `https://eventgrid.azure.net/.default`, …). @azure/identity is imported only when a sink uses
 * it.
 *
 * The token is cached and renewed before it expires: at the credential's refresh hint, or when
 * half its life (at most 5 minutes before expiry) is left. Concurrent requests share one token
 * request. After a 401 the sink asks once for a new token (`renew`), and sends again only when it
 * got a different one. The token is only ever put in an Authorization header: never logged, never
 * in an outcome's reason.
 */
import type { AccessToken, TokenCredential } from '@azure/core-auth';
import { z } from 'zod';
import { createCredential, type CredentialConfig } from './credentials.ts';

const guid = z.guid('must be a GUID (8-4-4-4-12 hex digits)');

export const EntraAuth = z.strictObject({
  kind: z
    .enum(['managedIdentity', 'default'])
    .describe("managedIdentity: the VM's identity (clientId for a user-assigned one); default: DefaultAzureCredential."),
  scope: z
    .string()
    .regex(/^\S+\/\.default$/, 'must be a .default scope, such as api://<application id>/.default')
    .describe("The scope to ask a token for: the receiving app's `.default` scope."),
  clientId: guid.optional().describe('With kind managedIdentity: a user-assigned identity, by its client id.'),
});
export type EntraAuth = z.infer<typeof EntraAuth>;

const MAX_EARLY_MS = 5 * 60_000;

/** credentialOf: the credential an `auth` of the HTTP sinks names. */
export function credentialOf(auth: EntraAuth): CredentialConfig {
  return { kind: auth.kind, ...(auth.clientId !== undefined ? { clientId: auth.clientId } : {}) };
}

export class BearerSource {
  readonly #credentialConfig: CredentialConfig;
  readonly #scope: string;
  readonly #now: () => number;
  #credential: Promise<TokenCredential> | null = null;
  #token: { value: string; renewAt: number } | null = null;
  #pending: Promise<string> | null = null;

  constructor(credential: CredentialConfig, scope: string, now: () => number = Date.now) {
    this.#credentialConfig = credential;
    this.#scope = scope;
    this.#now = now;
  }

  /** token: the cached token while it is fresh, else a new one. */
  async token(signal?: AbortSignal): Promise<string> {
    if (this.#token !== null && this.#now() < this.#token.renewAt) return this.#token.value;
    return this.#fetch(signal);
  }

  /**
   * renew: after the receiver refused `refused` (401), a new token, or null when the credential
   * gives the same one again (sending it again would be refused the same way).
   */
  async renew(refused: string, signal?: AbortSignal): Promise<string | null> {
    if (this.#token?.value === refused) this.#token = null;
    const next = await this.token(signal);
    return next === refused ? null : next;
  }

  #fetch(signal?: AbortSignal): Promise<string> {
    this.#pending ??= (async () => {
      try {
        this.#credential ??= createCredential(this.#credentialConfig).catch((err: unknown) => {
          // a credential that could not be made is made again at the next attempt
          this.#credential = null;
          throw err;
        });
        const credential = await this.#credential;
        const t: AccessToken | null = await credential.getToken(this.#scope, signal ? { abortSignal: signal } : {});
        if (t === null) throw Object.assign(new Error('the credential gave no token'), { name: 'CredentialUnavailableError' });
        const now = this.#now();
        const early = Math.min(MAX_EARLY_MS, Math.max(0, (t.expiresOnTimestamp - now) / 2));
        this.#token = { value: t.token, renewAt: Math.min(t.refreshAfterTimestamp ?? Infinity, t.expiresOnTimestamp - early) };
        return t.token;
      } finally {
        this.#pending = null;
      }
    })();
    return this.#pending;
  }
}
