/**
 * The keys the HTTP sinks share and the check that goes with them: the proxy setting, and the
 * refusal to send credentials over plain http to a host that is not loopback.
 */
import { z } from 'zod';
import { httpUrl } from './validators.ts';

/** The proxy setting of the HTTP sinks: env (HTTPS_PROXY/HTTP_PROXY/NO_PROXY), none (direct), or a proxy URL. */
export const ProxySetting = z
  .union([z.enum(['env', 'none']), httpUrl])
  .default('env')
  .describe('env: HTTPS_PROXY, HTTP_PROXY and NO_PROXY; none: direct; or a proxy URL.');

/**
 * allowInsecureHttp lets a sink send its credentials (a bearer or basic password, an access key,
 * an Entra ID token) over plain http to a host that is not loopback; off by default, because
 * anyone on the path can read them.
 */
export const allowInsecureHttp = z
  .boolean()
  .default(false)
  .describe('Lets the sink send its credentials over plain http to a host that is not loopback.');

/** isLoopback: a host name that never leaves the machine. */
export function isLoopback(hostname: string): boolean {
  const h = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h.endsWith('.localhost') || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/** plainHttpOffHost: the URL is plain http to a host that is not loopback (false when it is no URL: its own check says so). */
export function plainHttpOffHost(url: string): boolean {
  try {
    const u = new URL(url);
    return u.protocol === 'http:' && !isLoopback(u.hostname);
  } catch {
    return false;
  }
}

/**
 * httpsOrLoopback: an absolute http(s) URL where `what` travels (a bearer token, signing keys),
 * so plain http only to a loopback host, as the sinks' rule has it without allowInsecureHttp.
 */
export const httpsOrLoopback = (what: string) =>
  httpUrl.refine((v) => !plainHttpOffHost(v), `must be https: ${what} would travel over plain http to a host that is not loopback`);

/**
 * refusePlainHttpCredentials adds a problem at `urlKey` when `hasCredential` and the URL is
 * plain http to a host that is not loopback, unless `allowInsecureHttp` is set.
 */
export function refusePlainHttpCredentials(
  c: { allowInsecureHttp: boolean },
  url: string,
  urlKey: string,
  hasCredential: boolean,
  ctx: z.RefinementCtx,
): void {
  if (!hasCredential || c.allowInsecureHttp) return;
  if (plainHttpOffHost(url)) {
    ctx.addIssue({
      code: 'custom',
      path: [urlKey],
      message: 'would send credentials over plain http to a host that is not loopback; use https, or set allowInsecureHttp: true',
    });
  }
}
