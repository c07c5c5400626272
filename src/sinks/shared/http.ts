/**
 * postJson: one JSON POST, classified through the shared outcome table. Used by the chat sinks
 * whose endpoint is a plain webhook URL (Slack incoming webhooks, Teams Workflows). The URL is a
 * secret (it carries its own credentials): it never reaches a log.
 */
import { text as decode } from '../../lib/http-body.ts';
import { HttpClient } from '../../lib/http-client.ts';
import { classifyHttpStatus, classifyNetworkError, printable } from './classify.ts';
import type { Outcome } from '../contract.ts';

/** jsonClient: a keep-alive client that honours HTTP(S)_PROXY and NO_PROXY. */
export function jsonClient(): HttpClient {
  return new HttpClient({ proxy: 'env', maxSockets: 4 });
}

export async function postJson(client: HttpClient, url: string, body: unknown, signal: AbortSignal): Promise<Outcome> {
  try {
    const res = await client.request(url, {
      method: 'POST',
      signal,
      headers: { 'content-type': 'application/json; charset=utf-8', 'user-agent': 'se-bridge' },
      body: JSON.stringify(body),
      maxBodyBytes: 4096,
      onOverflow: 'drain',
    });
    return classifyHttpStatus(res.status, res.headers['retry-after'], res.status >= 300 ? printable(decode(res)) : '');
  } catch (err) {
    const outcome = classifyNetworkError(err);
    // error messages may quote the URL; keep only the code
    return outcome.status === 'retry' ? { status: 'retry', reason: outcome.reason.split(':')[0]! } : outcome;
  }
}
