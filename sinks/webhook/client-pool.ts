/**
 * The webhook sinks' HTTP clients: one pooled keep-alive client per origin, TLS settings and
 * proxy, shared by every webhook sink that targets it and closed with the last of them.
 */
import { readFileSync } from 'node:fs';
import { HttpClient } from '../../src/kit.ts';
import type { WebhookConfig } from './config.ts';

const clients = new Map<string, { client: HttpClient; users: number }>();

export function acquireClient(config: WebhookConfig): { key: string; client: HttpClient } {
  const origin = new URL(config.url).origin;
  const key = JSON.stringify([origin, config.tls.caFile ?? null, config.tls.insecureSkipVerify, config.proxy]);
  const existing = clients.get(key);
  if (existing) {
    existing.users += 1;
    return { key, client: existing.client };
  }
  const client = new HttpClient({
    proxy: config.proxy,
    maxSockets: 8,
    ...(config.tls.caFile ? { ca: readFileSync(config.tls.caFile, 'utf8') } : {}),
    ...(config.tls.insecureSkipVerify ? { rejectUnauthorized: false } : {}),
  });
  clients.set(key, { client, users: 1 });
  return { key, client };
}

export async function releaseClient(key: string): Promise<void> {
  const c = clients.get(key);
  if (c === undefined) return;
  c.users -= 1;
  if (c.users > 0) return;
  clients.delete(key);
  c.client.close();
}
