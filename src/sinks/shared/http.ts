/**
 * postJson: one JSON POST through undici, classified through the shared outcome table. Used by
 * the chat sinks whose endpoint is a plain webhook URL (Slack incoming webhooks, Teams
 * Workflows). The URL is a secret (it carries its own credentials): it never reaches a log.
 */
import { readBounded, text as decode } from '../../lib/http-body.ts';
import { EnvHttpProxyAgent, request, type Dispatcher } from 'undici';
import { classifyHttpStatus, classifyNetworkError, printable } from './classify.ts';
import type { Outcome } from '../contract.ts';

export function jsonClient(): Dispatcher {
  return new EnvHttpProxyAgent({ keepAliveTimeout: 30_000, connections: 4 });
}

export async function postJson(dispatcher: Dispatcher, url: string, body: unknown, signal: AbortSignal): Promise<Outcome> {
  try {
    const res = await request(url, {
      method: 'POST',
      dispatcher,
      signal,
      headers: { 'content-type': 'application/json; charset=utf-8', 'user-agent': 'se-bridge' },
      body: JSON.stringify(body),
    });
    const text = decode(await readBounded(res.body, 4096, 'drain'));
    return classifyHttpStatus(res.statusCode, res.headers['retry-after'], res.statusCode >= 300 ? printable(text) : '');
  } catch (err) {
    const outcome = classifyNetworkError(err);
    // undici error messages may quote the URL; keep only the code
    return outcome.status === 'retry' ? { status: 'retry', reason: outcome.reason.split(':')[0]! } : outcome;
  }
}
