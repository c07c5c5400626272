/**
 * The simulator's managed identity endpoint, as IMDS documents it:
 * `GET /metadata/identity/oauth2/token?api-version=2018-02-01&resource=…` with `Metadata: true`,
 * and for a user-assigned identity one of `client_id`, `object_id` or `msi_res_id`. The path is
 * also served with a trailing slash, which is how MSAL (under @azure/identity) asks for it.
 *
 * It answers the documented JSON (`access_token`, `expires_in`, `expires_on`, `not_before`,
 * `resource`, `token_type`, `client_id`, numbers as strings) with an unsigned test JWT
 * (`alg: none`) whose `aud` is the resource, `oid`/`appid` the identity, `xms_mirid` its
 * resource id, and `exp` the configured lifetime. Errors are the documented ones: 400
 * `invalid_request` for a missing resource, an identity that is not assigned to the VM, more
 * than one id, or no id while several user-assigned identities exist.
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';

export const TOKEN_PATH = '/metadata/identity/oauth2/token';
export const TENANT_ID = '72f988bf-0000-4000-8000-00000000cafe';

export const UserAssignedIdentity = z.strictObject({
  clientId: z.guid(),
  objectId: z.guid(),
  /** /subscriptions/…/resourceGroups/…/providers/Microsoft.ManagedIdentity/userAssignedIdentities/NAME */
  resourceId: z.string().startsWith('/subscriptions/'),
});
export type UserAssignedIdentity = z.infer<typeof UserAssignedIdentity>;

export const IdentitySettings = z.strictObject({
  /** Whether the VM has a system-assigned identity. */
  systemAssigned: z.boolean().optional(),
  userAssigned: z.array(UserAssignedIdentity).max(100).optional(),
  /** How long issued tokens live (real IMDS: about 24 hours). */
  tokenLifetimeSec: z
    .number()
    .int()
    .min(1)
    .max(7 * 86_400)
    .optional(),
});
export type IdentitySettings = z.infer<typeof IdentitySettings>;

export interface TokenRequest {
  at: number;
  resource: string | null;
  /** Which id the request named: `system`, or `client_id=…` / `object_id=…` / `msi_res_id=…`. */
  asked: string;
  status: number;
}

/** The claims of a test token (what a peer reads back). */
export interface TestClaims {
  aud: string;
  iss: string;
  tid: string;
  oid: string;
  sub: string;
  appid: string;
  xms_mirid: string;
  iat: number;
  nbf: number;
  exp: number;
  jti: string;
  idtyp: 'app';
}

const b64url = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');

/** testJwt makes an unsigned JWT (`alg: none`, empty signature) with these claims. */
export function testJwt(claims: TestClaims): string {
  return `${b64url({ typ: 'JWT', alg: 'none' })}.${b64url(claims)}.`;
}

/**
 * readJwt decodes a JWT's payload without verifying it (the simulator's tokens are unsigned):
 * null when the text is not three dot-separated base64url parts with a JSON object in the middle.
 */
export function readJwt(token: string): Record<string, unknown> | null {
  const parts = token.split('.');
  if (parts.length !== 3) return null;
  try {
    const payload = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8')) as unknown;
    return payload !== null && typeof payload === 'object' && !Array.isArray(payload) ? (payload as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

const invalid = (description: string): [number, unknown] => [400, { error: 'invalid_request', error_description: description }];

/** ManagedIdentities: the identities assigned to the simulated VM, and the tokens it issued. */
export class ManagedIdentities {
  systemAssigned = true;
  /** The system-assigned identity's service principal. */
  readonly system = { clientId: randomUUID(), objectId: randomUUID() };
  userAssigned: UserAssignedIdentity[] = [];
  tokenLifetimeSec = 86_399;
  readonly requests: TokenRequest[] = [];
  readonly #resourceId: string;

  constructor(vmResourceId: string) {
    this.#resourceId = vmResourceId;
  }

  configure(settings: IdentitySettings): void {
    const s = IdentitySettings.parse(settings);
    if (s.systemAssigned !== undefined) this.systemAssigned = s.systemAssigned;
    if (s.userAssigned !== undefined) this.userAssigned = s.userAssigned;
    if (s.tokenLifetimeSec !== undefined) this.tokenLifetimeSec = s.tokenLifetimeSec;
  }

  /** The documented answer to one token request (method, header and api-version already checked). */
  answer(query: URLSearchParams, now: number): [status: number, body: unknown] {
    const resource = query.get('resource');
    const ids = (['client_id', 'object_id', 'msi_res_id'] as const).filter((k) => query.get(k) !== null);
    const asked = ids.length === 0 ? 'system' : ids.map((k) => `${k}=${query.get(k)}`).join('&');
    const result = this.#answer(resource, ids, query, now);
    if (this.requests.length >= 10_000) this.requests.shift();
    this.requests.push({ at: now, resource, asked, status: result[0] });
    return result;
  }

  #answer(
    resource: string | null,
    ids: ('client_id' | 'object_id' | 'msi_res_id')[],
    query: URLSearchParams,
    now: number,
  ): [number, unknown] {
    if (resource === null || resource.trim() === '') return invalid("Required query variable 'resource' is missing");
    if (ids.length > 1) return invalid('Only one of client_id, object_id or msi_res_id may be specified');
    let principal: { clientId: string; objectId: string; resourceId: string } | undefined;
    if (ids.length === 1) {
      const key = ids[0]!;
      const value = query.get(key)!.toLowerCase();
      const idOf = (u: UserAssignedIdentity) => (key === 'client_id' ? u.clientId : key === 'object_id' ? u.objectId : u.resourceId);
      principal = this.userAssigned.find((u) => idOf(u).toLowerCase() === value);
      if (principal === undefined) return invalid('Identity not found');
    } else if (this.systemAssigned) {
      principal = { ...this.system, resourceId: this.#resourceId };
    } else if (this.userAssigned.length === 1) {
      principal = this.userAssigned[0]!;
    } else if (this.userAssigned.length > 1) {
      return invalid(
        'Multiple user assigned identities exist, please specify the clientId / resourceId of the identity in the token request',
      );
    } else {
      return invalid('Identity not found');
    }
    const iat = Math.floor(now / 1000);
    const exp = iat + this.tokenLifetimeSec;
    const aud = resource.replace(/\/\.default$/, '');
    const token = testJwt({
      aud,
      iss: `https://sts.windows.net/${TENANT_ID}/`,
      tid: TENANT_ID,
      oid: principal.objectId,
      sub: principal.objectId,
      appid: principal.clientId,
      xms_mirid: principal.resourceId,
      iat,
      nbf: iat - 300,
      exp,
      jti: randomUUID(),
      idtyp: 'app',
    });
    return [
      200,
      {
        access_token: token,
        client_id: principal.clientId,
        expires_in: String(this.tokenLifetimeSec),
        expires_on: String(exp),
        ext_expires_in: String(this.tokenLifetimeSec),
        not_before: String(iat - 300),
        resource,
        token_type: 'Bearer',
      },
    ];
  }
}
