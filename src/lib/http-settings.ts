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
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return; // the URL's own check reports it
  }
  if (u.protocol === 'http:' && !isLoopback(u.hostname)) {
    ctx.addIssue({
      code: 'custom',
      path: [urlKey],
      message: 'would send credentials over plain http to a host that is not loopback; use https, or set allowInsecureHttp: true',
    });
  }
}
