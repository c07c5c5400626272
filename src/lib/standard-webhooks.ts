/**
 * Standard Webhooks signatures: `webhook-signature: v1,<base64 HMAC-SHA256>` over
 * `<webhook-id>.<webhook-timestamp>.<body>`, keyed by the base64 secret after `whsec_`.
 * Several secrets sign together (space-separated signatures) so a receiver can rotate keys.
 *
 * @see https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md
 */
import { createHmac } from 'node:crypto';
import { z } from 'zod';

const PREFIX = 'whsec_';

/** secretKey decodes a `whsec_` secret; null when it is not one. */
export function secretKey(secret: string): Buffer | null {
  if (!secret.startsWith(PREFIX)) return null;
  const b64 = secret.slice(PREFIX.length);
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64)) return null;
  const key = Buffer.from(b64, 'base64');
  return key.length >= 16 ? key : null;
}

export function sign(key: Buffer, id: string, timestamp: number | string, body: string | Buffer): string {
  const mac = createHmac('sha256', key);
  mac.update(`${id}.${timestamp}.`);
  mac.update(body);
  return `v1,${mac.digest('base64')}`;
}

/** signatureHeaders builds the three Standard Webhooks headers for one request. */
export function signatureHeaders(
  keys: readonly Buffer[],
  id: string,
  body: string | Buffer,
  now: number = Date.now(),
): Record<string, string> {
  const timestamp = Math.floor(now / 1000);
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': keys.map((k) => sign(k, id, timestamp, body)).join(' '),
  };
}

/** whsec is the configuration rule for a Standard Webhooks secret. */
/** keyOf decodes a secret the schema has already checked (whsec), once, where the configuration is parsed. */
export function keyOf(secret: string): Buffer {
  const key = secretKey(secret);
  if (key === null) throw new Error('not a whsec_ secret (the schema lets no such value through)');
  return key;
}

export const whsec = z
  .string()
  .refine((s) => secretKey(s) !== null, 'must be a Standard Webhooks secret: "whsec_" followed by base64 of at least 16 bytes');
