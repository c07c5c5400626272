/**
 * A command resolves only the values it uses: a value whose variable is not set where the command
 * does not need it gets a placeholder the schema takes. So every value the schemas mark as a
 * secret (the bridge's and the relay's, every sink's) must take one of the placeholders, whatever
 * its shape; and a rule that compares a value with one left unresolved is not checked.
 */
import { generateKeyPairSync } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { PLACEHOLDERS } from '../../src/config/expand.ts';
import { needs } from '../../src/commands/common.ts';
import { ConfigError, loadConfigFile, loadFileWith, parseConfigText } from '../../src/config/load.ts';
import { BridgeConfig } from '../../src/config/schema.ts';
import { RelayConfig } from '../../src/relay/config.ts';
import { ROOT, tempDir } from '../helpers.ts';

/** secretsIn: every schema marked secret (`writeOnly`) inside `schema`, each with where it is. */
function secretsIn(schema: z.ZodType, at = '', seen = new Set<unknown>()): { at: string; schema: z.ZodType }[] {
  if (seen.has(schema)) return [];
  seen.add(schema);
  if (z.globalRegistry.get(schema)?.writeOnly === true) return [{ at, schema }];
  const def = (schema as unknown as { _zod: { def: Record<string, unknown> } })._zod.def;
  const inner = (s: unknown, where: string) => secretsIn(s as z.ZodType, where, seen);
  switch (def.type) {
    case 'object':
      return Object.entries(def.shape as Record<string, unknown>).flatMap(([k, v]) => inner(v, at === '' ? k : `${at}.${k}`));
    case 'array':
      return inner(def.element, `${at}[]`);
    case 'union':
      return (def.options as unknown[]).flatMap((o, i) => inner(o, `${at}|${i}`));
    case 'pipe':
      return [...inner(def.in, at), ...inner(def.out, at)];
    case 'optional':
    case 'nullable':
    case 'default':
    case 'prefault':
    case 'readonly':
    case 'catch':
      return inner(def.innerType, at);
    case 'record':
      return inner(def.valueType, `${at}.*`);
    default:
      return [];
  }
}

describe('placeholders', () => {
  const secrets = [...secretsIn(BridgeConfig), ...secretsIn(RelayConfig).map((s) => ({ ...s, at: `relay.${s.at}` }))];

  it('the schemas have secrets of many shapes (the walk finds them)', () => {
    const where = secrets.map((s) => s.at);
    for (const key of ['approval.secret', 'relay.signingKey', 'relay.fleetKey', 'relay.readKeys[]', 'fleet.store|0.connectionString'])
      expect(where).toContain(key);
    expect(where.some((w) => w.endsWith('.botToken'))).toBe(true);
    expect(secrets.length).toBeGreaterThan(20);
  });

  it('every secret of the bridge and the relay takes one of them', () => {
    const refused = secrets.filter((s) => !PLACEHOLDERS.some((p) => s.schema.safeParse(p).success)).map((s) => s.at);
    expect(refused).toEqual([]);
  });

  it('a read leaves a sink secret of any shape unresolved, and validate names it', () => {
    const text = 'sinks: [{ name: chat, type: slack, botToken: "${SLACK_BOT_TOKEN}", channel: C0123456789 }]\n';
    const read = parseConfigText(text, 't.yaml', {}, { needs: (path) => path[0] === 'fleet' });
    expect(read.sinks[0]).toMatchObject({ name: 'chat', type: 'slack' });
    expect(() => parseConfigText(text, 't.yaml', {})).toThrow(ConfigError);
    expect(() => parseConfigText(text, 't.yaml', {})).toThrow(/sinks\[0\]\.botToken: environment variable SLACK_BOT_TOKEN is not set/);
  });

  it('the shipped examples, with none of their secrets, load for every verb that does not use them', () => {
    // each read names what it reads (src/commands); nothing of the rest is set
    const reads = {
      status: needs.sections('imds', 'state', 'identity', 'calendar', 'health', 'fleet'),
      'fleet status': needs.sections('fleet'),
      drill: needs.sections('state'),
      calendar: needs.sections('calendar'),
      approve: needs.sections('approval', 'server'),
    };
    for (const [verb, uses] of Object.entries(reads)) {
      const problems = (() => {
        try {
          loadConfigFile(join(ROOT, 'config', 'bridge.example.yaml'), {}, { needs: uses });
          return [];
        } catch (err) {
          if (!(err instanceof ConfigError)) throw err;
          return err.problems;
        }
      })();
      // approve signs its request with approval.secret: it names the approval section's secrets, and only those
      expect({ verb, problems }).toEqual({
        verb,
        problems:
          verb === 'approve'
            ? [
                'approval.secret: environment variable SE_BRIDGE_APPROVAL_SECRET is not set',
                'approval.slack.signingSecret: environment variable SLACK_SIGNING_SECRET is not set',
              ]
            : [],
      });
    }
    const relay = loadFileWith(RelayConfig, join(ROOT, 'config', 'relay.example.yaml'), {}, { needs: needs.sections('fleet') });
    expect(relay.fleet?.store).toMatchObject({ type: 'blob', accountUrl: 'https://myfleetstore.blob.core.windows.net' });
  });

  it('a rule that compares a value with one left unresolved is not checked; with both, it is', () => {
    const dir = tempDir();
    try {
      const [pair, other] = [generateKeyPairSync('ed25519'), generateKeyPairSync('ed25519')];
      const publicKey = pair.publicKey.export({ format: 'der', type: 'spki' }).toString('base64');
      const file = join(dir.path, 'relay.yaml');
      writeFileSync(
        file,
        [
          'serviceBus: { connectionString: "${SB}", queue: q, replies: r }',
          'signingKey: ${SIGNING_KEY}',
          `publicKey: ${publicKey}`,
          `fleetKey: ${Buffer.alloc(32, 1).toString('base64')}`,
          'fleet: { store: { type: kubernetes } }',
        ].join('\n'),
      );
      // a read of the store: publicKey, which it does not need either, is not compared with a key it does not have
      const read = loadFileWith(RelayConfig, file, {}, { needs: (path) => path[0] === 'fleet' });
      expect(read.fleet?.store).toMatchObject({ type: 'kubernetes' });
      const problems = (env: NodeJS.ProcessEnv) => {
        try {
          loadFileWith(RelayConfig, file, env);
          return [];
        } catch (err) {
          if (!(err instanceof ConfigError)) throw err;
          return err.problems;
        }
      };
      // with every value: the rule is checked, with the right key and with another one
      const sb = PLACEHOLDERS[3]!;
      const key = (k: typeof pair) => k.privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64');
      expect(problems({ SB: sb, SIGNING_KEY: key(pair) })).toEqual([]);
      expect(problems({ SB: sb, SIGNING_KEY: key(other) })).toEqual([
        expect.stringMatching(/^publicKey: is not the public key of signingKey/),
      ]);
      // without signingKey, a command that uses everything names it, and says nothing false of publicKey
      expect(problems({ SB: sb })).toEqual(['signingKey: environment variable SIGNING_KEY is not set']);
    } finally {
      dir.cleanup();
    }
  });
});
