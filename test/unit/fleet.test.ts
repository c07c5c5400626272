import { describe, expect, it } from 'vitest';
import {
  checkCommand,
  commandId,
  linkKeyFor,
  newFleetKeys,
  outcomeVerifies,
  privateKeyOf,
  publicKeyOf,
  sessionFor,
  signCommand,
  signOutcome,
  type ApprovalCommand,
} from '../../src/fleet/keys.ts';

const keys = newFleetKeys();
const now = Math.floor(Date.now() / 1000);
const command: ApprovalCommand = {
  v: 1,
  id: commandId('vm-a', { webhookId: 'w1' }),
  vm: 'vm-a',
  eventId: 'E-1',
  by: 'alice',
  via: 'api',
  reason: '',
  nonce: null,
  iat: now,
  exp: now + 60,
};

describe('fleet keys and commands', () => {
  it('keeps a resource id as the session id up to 128 characters, and hashes a longer one', () => {
    const short = '/subscriptions/x/resourceGroups/RG/providers/Microsoft.Compute/virtualMachines/VM1';
    expect(sessionFor(short)).toBe(short.toLowerCase());
    const long = `/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.Compute/virtualMachineScaleSets/web/virtualMachines/12`;
    expect(long.length).toBeGreaterThan(128);
    expect(sessionFor(long)).toMatch(/^sha256-[0-9a-f]{64}$/);
    expect(sessionFor(long.toUpperCase())).toBe(sessionFor(long));
    expect(sessionFor(sessionFor(long))).toBe(sessionFor(long));
  });

  it('derives a different link key per VM, the same whatever the case', () => {
    const fleet = Buffer.from(keys.fleetKey, 'base64');
    expect(linkKeyFor(fleet, 'vm-a').equals(linkKeyFor(fleet, 'VM-A'))).toBe(true);
    expect(linkKeyFor(fleet, 'vm-a').equals(linkKeyFor(fleet, 'vm-b'))).toBe(false);
    expect(linkKeyFor(Buffer.from(newFleetKeys().fleetKey, 'base64'), 'vm-a').equals(linkKeyFor(fleet, 'vm-a'))).toBe(false);
  });

  it('derives one command id from one request', () => {
    expect(commandId('VM-A', { webhookId: 'w1' })).toBe(command.id);
    expect(commandId('vm-a', { webhookId: 'w2' })).not.toBe(command.id);
    expect(commandId('vm-a', { nonce: 'w1' })).not.toBe(command.id);
  });

  it('accepts a signed command for this VM, and refuses a changed byte, another key, another VM and an old one', () => {
    const key = privateKeyOf(keys.signingKey)!;
    const pub = publicKeyOf(keys.publicKey)!;
    const { body, signature } = signCommand(key, command);
    expect(checkCommand(pub, body, signature, 'VM-A')).toEqual({ ok: true, command });
    const changed = Buffer.from(body.toString().replace('alice', 'alicf'));
    expect(checkCommand(pub, changed, signature, 'vm-a')).toMatchObject({ ok: false, code: 'BAD_SIGNATURE' });
    expect(checkCommand(publicKeyOf(newFleetKeys().publicKey)!, body, signature, 'vm-a')).toMatchObject({
      ok: false,
      code: 'BAD_SIGNATURE',
    });
    expect(checkCommand(pub, body, signature, 'vm-b')).toMatchObject({ ok: false, code: 'OTHER_VM' });
    expect(checkCommand(pub, body, signature, 'vm-a', now + 60)).toMatchObject({ ok: false, code: 'EXPIRED' });
    expect(checkCommand(pub, body, undefined, 'vm-a')).toMatchObject({ ok: false, code: 'BAD_SIGNATURE' });
    const odd = signCommand(key, { ...command, extra: 1 } as never);
    expect(checkCommand(pub, odd.body, odd.signature, 'vm-a')).toMatchObject({ ok: false, code: 'MALFORMED' });
  });

  it('believes an outcome only with the link key of the VM it names', () => {
    const fleet = Buffer.from(keys.fleetKey, 'base64');
    const body = Buffer.from('{"outcome":"approved"}');
    const sig = signOutcome(linkKeyFor(fleet, 'vm-a'), body);
    expect(outcomeVerifies(linkKeyFor(fleet, 'vm-a'), body, sig)).toBe(true);
    expect(outcomeVerifies(linkKeyFor(fleet, 'vm-b'), body, sig)).toBe(false);
    expect(outcomeVerifies(linkKeyFor(fleet, 'vm-a'), Buffer.from('{"outcome":"approved" }'), sig)).toBe(false);
  });
});

describe('the relay configuration', () => {
  it('loads the example file, and documents every key of its schema there', async () => {
    const { readFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { z } = await import('zod');
    const { loadFileWith } = await import('../../src/config/load.ts');
    const { RelayConfig } = await import('../../src/relay/config.ts');
    const { EXAMPLE_ENV, ROOT, undocumentedKeys } = await import('../helpers.ts');
    const file = join(ROOT, 'config', 'relay.example.yaml');
    const config = loadFileWith(RelayConfig, file, EXAMPLE_ENV);
    expect(config.serviceBus).toMatchObject({ queue: 'se-bridge-approvals', replies: 'se-bridge-approval-replies' });
    const text = readFileSync(file, 'utf8');
    // the relay's own sinks are the bridge's sink types: their keys are documented in bridge.example.yaml
    const schema = z.toJSONSchema(RelayConfig, { io: 'input', unrepresentable: 'any' }) as { properties: Record<string, unknown> };
    schema.properties.sinks = { type: 'array' };
    expect(text).toMatch(/^sinks:$/m);
    expect(undocumentedKeys(schema, text)).toEqual([]);
  });

  it("listens for its probes and metrics on loopback unless told otherwise, as the bridge's do", async () => {
    const { RelayConfig } = await import('../../src/relay/config.ts');
    const c = RelayConfig.parse({
      serviceBus: { connectionString: 'Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=k;SharedAccessKey=c2VjcmV0LWtleQ==' },
      signingKey: keys.signingKey,
      fleetKey: keys.fleetKey,
    });
    expect(c.observability.listen).toBe('127.0.0.1:9464');
    expect(c.observability.at).toEqual({ host: '127.0.0.1', port: 9464 });
  });

  it('names every problem of a relay file by its path, with exit code 2', async () => {
    const { readFileSync, writeFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { EXAMPLE_ENV, ROOT, tempDir } = await import('../helpers.ts');
    const { cli } = await import('../e2e/process.ts');
    const dir = tempDir();
    try {
      const file = join(dir.path, 'relay.yaml');
      writeFileSync(file, 'serviceBus: { queue: q }\nsigningKey: not-a-key\nfleetKey: c2hvcnQ=\nreplyWaitMs: 99999\n');
      const r = await cli(['relay', '--config', file]);
      expect(r.code).toBe(2);
      for (const path of ['serviceBus.connectionString', 'signingKey', 'fleetKey', 'replyWaitMs']) expect(r.stderr).toContain(`${path}:`);
      // validate checks it without starting a relay: with --relay, or recognised by its keys
      for (const args of [
        ['validate', '--relay', '--config', file],
        ['validate', '--config', file],
      ]) {
        const v = await cli(args);
        expect(v.code, args.join(' ')).toBe(2);
        for (const path of ['serviceBus.connectionString', 'signingKey', 'fleetKey', 'replyWaitMs']) expect(v.stderr).toContain(`${path}:`);
        expect(v.stderr).not.toContain('unknown key');
      }
      // a token or signing keys over plain http to a host that is not loopback: refused by its path
      const example = readFileSync(join(ROOT, 'config', 'relay.example.yaml'), 'utf8');
      const plain = join(dir.path, 'plain.yaml');
      writeFileSync(
        plain,
        example
          .replace('https://management.azure.com', 'http://management.example.com')
          .replace('https://myfleetstore.blob.core.windows.net', 'http://myfleetstore.blob.core.windows.net'),
      );
      const refused = await cli(['validate', '--relay', '--config', plain], EXAMPLE_ENV);
      expect(refused.code).toBe(2);
      for (const path of ['fleet.store.accountUrl: must be https', 'azure.arm.endpoint: must be https'])
        expect(refused.stderr).toContain(path);
      const ok = await cli(['validate', '--relay', '--config', join(ROOT, 'config', 'relay.example.yaml')], EXAMPLE_ENV);
      expect(ok.code).toBe(0);
      expect(ok.stdout).toContain('valid relay configuration; listens on 127.0.0.1:8080');
    } finally {
      dir.cleanup();
    }
  }, 90_000);
});

describe('the bridge configuration of fleet approvals', () => {
  it('needs the inbox with relayUrl, refuses publicUrl beside it, and checks the keys', async () => {
    const { validateConfig, ConfigError } = await import('../../src/config/load.ts');
    const problems = (approval: Record<string, unknown>): string[] => {
      try {
        validateConfig({ approval }, 'test', {});
        return [];
      } catch (err) {
        if (err instanceof ConfigError) return [...err.problems];
        throw err;
      }
    };
    const cs = 'Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=k;SharedAccessKey=c2VjcmV0LWtleQ==';
    const inbox = { connectionString: cs, relayPublicKey: keys.publicKey, linkKey: keys.fleetKey };
    expect(problems({ relayUrl: 'https://relay.example.com', inbox })).toEqual([]);
    // the inbox's connection string and link key are secrets: logs never show them
    const { secretsOf } = await import('../../src/config/schema.ts');
    expect(secretsOf(validateConfig({ approval: { relayUrl: 'https://relay.example.com', inbox } }, 'test', {}))).toEqual(
      expect.arrayContaining([cs, keys.fleetKey]),
    );
    expect(problems({ relayUrl: 'https://relay.example.com' })).toEqual([
      expect.stringMatching(/^approval\.inbox: is required with approval\.relayUrl/),
    ]);
    expect(
      problems({
        relayUrl: 'https://relay.example.com',
        publicUrl: 'https://vm.example.com',
        secret: `whsec_${Buffer.alloc(32, 1).toString('base64')}`,
        inbox,
      }),
    ).toEqual([expect.stringMatching(/^approval\.publicUrl: goes with the approval server/)]);
    const bad = problems({ inbox: { connectionString: cs, relayPublicKey: keys.signingKey, linkKey: 'c2hvcnQ=' } });
    expect(bad).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^approval\.inbox\.relayPublicKey: must be an Ed25519 public key/),
        expect.stringMatching(/^approval\.inbox\.linkKey: must be base64 of at least 32 bytes/),
      ]),
    );
    expect(problems({ inbox: { relayPublicKey: keys.publicKey, linkKey: keys.fleetKey } })).toEqual([
      expect.stringMatching(/^approval\.inbox\.connectionString: set either connectionString or fullyQualifiedNamespace/),
    ]);
  });
});
