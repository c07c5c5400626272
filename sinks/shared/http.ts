import { type Outcome } from '../../src/api.ts';
import { type BearerSource, classifyHttpStatus, classifyNetworkError, HttpClient } from '../../src/kit.ts';
import { authorized } from './entra.ts';
/**
 * postJson: one JSON POST, classified through the shared outcome table. Used by the chat sinks
 * whose endpoint is a plain webhook URL (Slack incoming webhooks, Teams Workflows). The URL is a
 * secret (it carries its own credentials): it never reaches a log.
 */

/** jsonClient: a keep-alive client that honours HTTP(S)_PROXY and NO_PROXY. */
export function jsonClient(): HttpClient {
  return new HttpClient({ proxy: 'env', maxSockets: 4 });
}

/** postJson posts `body`; with `bearer`, an Entra ID token goes with it (renewed once after a 401). */
export async function postJson(
  client: HttpClient,
  url: string,
  body: unknown,
  signal: AbortSignal,
  bearer: BearerSource | null = null,
): Promise<Outcome> {
  try {
    const text = JSON.stringify(body);
    const answer = await authorized(bearer, signal, (authorization) =>
      client.request(url, {
        method: 'POST',
        signal,
        headers: { 'content-type': 'application/json; charset=utf-8', 'user-agent': 'se-bridge', ...authorization },
        body: text,
        maxBodyBytes: 4096,
        onOverflow: 'drain',
      }),
    );
    if ('outcome' in answer) return answer.outcome;
    const res = answer.res;
    return classifyHttpStatus(res.status, res.headers['retry-after'], answer.detail);
  } catch (err) {
    const outcome = classifyNetworkError(err);
    // error messages may quote the URL; keep only the code
    return outcome.status === 'retry' ? { status: 'retry', reason: outcome.reason.split(':')[0]! } : outcome;
  }
}
