/**
 * Requests with an Entra ID bearer token, for the HTTP sinks: the token in `authorization`, one
 * renewal after a 401, and a token that cannot be had, or is refused twice, as a retry.
 */
import { type Outcome, retry } from '../../src/api.ts';
import { type BearerSource, type HttpResponse, printable, responseText as decode } from '../../src/kit.ts';

/** credentialFailure: a token that could not be had, as a retry (the credential's message carries no secret). */
function credentialFailure(err: unknown): Outcome {
  const e = err as { name?: string; message?: string };
  return retry(`${e?.name ?? 'Error'}: could not get an Entra ID token: ${String(e?.message ?? err).slice(0, 300)}`);
}

/**
 * authorized sends a request with the bearer's token in `authorization` (none without a
 * bearer). After a 401 it renews the token once and sends again; a 401 that stays is a retry
 * (a role or app assignment can take minutes to apply). A token that cannot be had is a retry
 * too. Otherwise the answer is the caller's to classify, with `detail`: the text of an answer
 * of 300 or more, the tokens sent cut out of it before it is shortened (a receiver may echo the
 * Authorization header), made printable.
 */
export async function authorized(
  bearer: BearerSource | null,
  signal: AbortSignal,
  send: (authorization: Record<string, string>) => Promise<HttpResponse>,
): Promise<{ res: HttpResponse; detail: string } | { outcome: Outcome }> {
  type R = HttpResponse;
  const sent: string[] = [];
  const detail = (res: R) =>
    res.status >= 300 ? printable(sent.reduce((t, token) => t.split(token).join('[redacted]'), decode(res))) : '';
  const attempt = (token: string | null) => {
    if (token !== null) sent.push(token);
    return send(token === null ? {} : { authorization: `Bearer ${token}` });
  };
  if (bearer === null) {
    const res = await attempt(null);
    return { res, detail: detail(res) };
  }
  let token: string;
  try {
    token = await bearer.token(signal);
  } catch (err) {
    return { outcome: credentialFailure(err) };
  }
  let res = await attempt(token);
  if (res.status !== 401) return { res, detail: detail(res) };
  const next = await bearer.renew(token, signal).catch(() => null);
  if (next !== null) res = await attempt(next);
  if (res.status !== 401) return { res, detail: detail(res) };
  const why = detail(res);
  return {
    outcome: retry(`HTTP 401: the Entra ID token was refused${next !== null ? ', also after a renewal' : ''}${why ? `: ${why}` : ''}`),
  };
}
