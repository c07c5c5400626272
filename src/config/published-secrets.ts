/**
 * publishedSecretProblems: a secret that anyone can read is no secret. Every value the schema
 * marks as a secret is checked against those published in documentation and test vectors, and
 * those that ever stood in this project's own files (examples, fallbacks): a configuration
 * holding one is refused, naming the key, so an example cannot go live by accident. `demo` makes
 * its own random secrets.
 */
import { z } from 'zod';
import { markedSecrets } from './marked-secrets.ts';
import { everyString } from './schema.ts';

export const PUBLISHED_SECRETS: readonly string[] = [
  // the Standard Webhooks specification's example secret, and its key
  'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  'MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  // Slack's documentation: "Verifying requests from Slack"
  '8f742231b10e8888abcd99yyyzzz85a5',
  // keys and placeholders that this project's example files once held
  'MC4CAQAwBQYDK2VwBCIEIIKEKq3ufB3Y7YVpWX4DH7JNVIrcj5hdXnpb+MnTiRhM',
  '3lGf57WyVlv2sFhuxPb9VkL4L1jwMB8n4h73UA1PGoA=',
  'SharedAccessKey=c2VjcmV0',
  'change-me',
  'https://hooks.slack.com/services/T000/B000/XXXX',
  'https://prod-00.westeurope.logic.azure.com/workflows/x/triggers/manual/paths/invoke?sig=y',
];

/**
 * keyOf: the bytes a secret stands for when it is a key written in base64 (with or without
 * `whsec_`, padding or the URL-safe alphabet), so `…LaSw=` is the published `…LaSw`; else null.
 */
function keyOf(v: string): string | null {
  const b64 = v.startsWith('whsec_') ? v.slice(6) : v;
  if (!/^[A-Za-z0-9+/_-]{16,}={0,2}$/.test(b64)) return null;
  const bytes = Buffer.from(b64.replace(/=+$/, '').replaceAll('-', '+').replaceAll('_', '/'), 'base64');
  return bytes.length >= 16 ? bytes.toString('hex') : null;
}

const PUBLISHED_KEYS = new Set(PUBLISHED_SECRETS.map(keyOf).filter((k): k is string => k !== null));

/** publishedSecretProblems lists, by path, the secrets of `value` that are published. */
export function publishedSecretProblems(schema: z.ZodType, value: unknown): string[] {
  const problems = new Set<string>();
  for (const marked of markedSecrets(schema, value)) {
    everyString(marked.value, (v) => {
      const key = keyOf(v);
      if ((key !== null && PUBLISHED_KEYS.has(key)) || PUBLISHED_SECRETS.some((p) => v === p || v.includes(`${p};`) || v.endsWith(p))) {
        problems.add(
          `${marked.path}: is a published example value, known to anyone; make a secret of your own (for a whsec_ secret: echo "whsec_$(openssl rand -base64 32)")`,
        );
      }
    });
  }
  return [...problems];
}
