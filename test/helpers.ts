/** Shared test helpers: fixtures, polling for a condition (bounded), temp dirs. */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino, type Logger } from 'pino';
import { request } from 'undici';
import { HttpError } from '../src/approval/requests.ts';
import { ConfigError, validateConfig } from '../src/config/load.ts';
import { secretKey, signatureHeaders } from '../src/lib/standard-webhooks.ts';
import { ROOT } from '../testkit/fixtures.ts';

export { captureLogger, fixtureDocument, fixtureText, ROOT } from '../testkit/fixtures.ts';
export const CLI = join(ROOT, 'src', 'commands', 'cli.ts');

/** waitFor polls `check` until it returns a truthy value; bounded in time and count. */
export async function waitFor<T>(check: () => T | Promise<T>, what: string, timeoutMs = 15_000, everyMs = 25): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (let i = 0; i < Math.ceil(timeoutMs / everyMs) + 1; i++) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/**
 * laterReads waits until IMDS has answered `n` more reads of the scheduled events than it had: a
 * poll loop reads, acts on what it read, then waits, so a bridge that read twice more has acted on
 * everything it saw before. A check that nothing happened comes after it.
 */
export async function laterReads(
  sim: { readonly requests: readonly { readonly path: string }[] },
  n = 2,
  timeoutMs = 15_000,
): Promise<void> {
  const reads = () => sim.requests.filter((r) => r.path === '/metadata/scheduledevents').length;
  const mark = reads();
  await waitFor(() => reads() >= mark + n, `${n} more IMDS reads`, timeoutMs);
}

export function tempDir(prefix = 'se-bridge-test-'): { path: string; cleanup(): void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, cleanup: () => rmSync(path, { recursive: true, force: true }) };
}

export const silentLogger: Logger = pino({ level: 'silent' });

/** readText reads a file the bridge writes, or '' while it does not exist yet. */
export function readText(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

/** undocumentedKeys lists the property names of a JSON Schema, at any depth, that `text` never writes as `key:`. */
export function undocumentedKeys(schema: unknown, text: string): string[] {
  const keys = new Set<string>();
  const walk = (node: unknown): void => {
    if (node === null || typeof node !== 'object') return;
    const n = node as { properties?: Record<string, unknown>; items?: unknown; anyOf?: unknown[]; oneOf?: unknown[] };
    for (const [k, v] of Object.entries(n.properties ?? {})) {
      keys.add(k);
      walk(v);
    }
    walk(n.items);
    for (const o of [...(n.anyOf ?? []), ...(n.oneOf ?? [])]) walk(o);
  };
  walk(schema);
  return [...keys].filter((k) => !new RegExp(`\\b${k}:`).test(text));
}

export { bridgeEvents } from '../testkit/events.ts';

/**
 * EXAMPLE_ENV: the environment the shipped example configurations read their secrets from
 * (they have no fallbacks); values of this run's own, never a published one.
 */
export const EXAMPLE_ENV: NodeJS.ProcessEnv = (() => {
  const key = (n: number) => randomBytes(n).toString('base64');
  const pair = generateKeyPairSync('ed25519');
  return {
    OPS_WEBHOOK_SECRET: `whsec_${key(32)}`,
    OPS_WEBHOOK_TOKEN: key(24),
    EVENTHUB_CONNECTION_STRING: `Endpoint=sb://myns.servicebus.windows.net/;SharedAccessKeyName=send;SharedAccessKey=${key(32)};EntityPath=maintenance`,
    SERVICEBUS_CONNECTION_STRING: `Endpoint=sb://myns.servicebus.windows.net/;SharedAccessKeyName=send;SharedAccessKey=${key(32)}`,
    EVENTGRID_KEY: key(32),
    SLACK_WEBHOOK_URL: `https://hooks.slack.com/services/T0/B0/${randomBytes(12).toString('hex')}`,
    TEAMS_WORKFLOW_URL: `https://prod-00.westeurope.logic.azure.com/workflows/w/triggers/manual/paths/invoke?sig=${randomBytes(16).toString('hex')}`,
    SE_BRIDGE_APPROVAL_SECRET: `whsec_${key(32)}`,
    SLACK_SIGNING_SECRET: randomBytes(16).toString('hex'),
    SE_BRIDGE_RELAY_SIGNING_KEY: pair.privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64'),
    SE_BRIDGE_RELAY_PUBLIC_KEY: pair.publicKey.export({ format: 'der', type: 'spki' }).toString('base64'),
    SE_BRIDGE_FLEET_KEY: key(32),
    SE_BRIDGE_API_SECRET: `whsec_${key(32)}`,
    SE_BRIDGE_FLEET_READ_KEY: key(24),
    SE_BRIDGE_CONSOLE_KEY_PLATFORM: key(24),
    SE_BRIDGE_EVENTGRID_KEY: key(24),
    SE_BRIDGE_AZURE_RECORD_KEY: key(32),
  };
})();

export { freePort } from '../src/lib/http-server.ts';

/** readJsonLines: the JSON values of a JSON Lines file (a file sink's), oldest first; none while it does not exist. */
export function readJsonLines<T>(path: string): T[] {
  return readText(path)
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as T);
}

/** configProblems: every problem validate names in a configuration, each with its path ([] when it is valid). */
export function configProblems(raw: unknown): readonly string[] {
  try {
    validateConfig(raw, 't', {});
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

/** postApproval: POST /v1/approvals to an approval server, signed with `secret` (Standard Webhooks); its status and JSON answer. */
export async function postApproval(serverUrl: string, secret: string, body: Record<string, unknown>) {
  const text = JSON.stringify(body);
  const res = await request(`${serverUrl}/v1/approvals`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...signatureHeaders([secretKey(secret)!], `msg_${Math.random()}`, text) },
    body: text,
  });
  return { status: res.statusCode, json: (await res.body.json()) as Record<string, any> };
}

/** refusalOf: the HttpError `f` throws, as its status, code and message (an error of another kind is thrown on). */
export function refusalOf(f: () => unknown): { status: number; code: string; message: string } {
  try {
    f();
  } catch (err) {
    if (err instanceof HttpError) return { status: err.status, code: err.code, message: err.message };
    throw err;
  }
  throw new Error('no refusal');
}

/** envSaved: the environment variables `names` as they are now, and `restore`, which puts them back (unset ones unset). */
export function envSaved(...names: string[]): { restore: () => void } {
  const saved = names.map((n) => [n, process.env[n]] as const);
  return {
    restore: () => {
      for (const [k, v] of saved)
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
    },
  };
}
