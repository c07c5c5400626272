/**
 * se-bridge approve EVENTID: approve from the box itself, through the same path as every
 * other approval — a signed POST /v1/approvals to the running daemon's approval server; or,
 * with --relay and --vm, to the fleet's relay (signed with $SE_BRIDGE_RELAY_API_SECRET, read from
 * the environment, never from arguments), through the VM's bridge or (--via arm) Resource Manager.
 */
import { randomUUID } from 'node:crypto';
import { userInfo } from 'node:os';
import { HttpClient } from '../lib/http-client.ts';
import { keyOf, signatureHeaders, whsec } from '../lib/standard-webhooks.ts';
import { CONFIG_OPTIONS, EXIT, loadOrReport, needs, parse, UsageError } from './common.ts';

export async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parse(
    argv,
    {
      ...CONFIG_OPTIONS,
      ...{ reason: { type: 'string' }, force: { type: 'boolean' }, json: { type: 'boolean' } },
      ...{ relay: { type: 'string' }, vm: { type: 'string' }, via: { type: 'string' } },
    },
    true,
  );
  if (positionals.length !== 1) throw new UsageError('expected one EventId');
  if (values.force && !values.reason)
    throw new UsageError('--force needs --reason: approving past the fleet budget or a blackout goes on the record');
  const target = values.relay === undefined ? await daemonTarget(values) : relayTarget(values);
  if (target === null) return EXIT.usage;
  const { key, base, where } = target;
  const body = JSON.stringify({
    ...(values.relay === undefined ? {} : { vm: values.vm }),
    eventId: positionals[0],
    approver: `cli:${userInfo().username}`,
    ...(values.reason ? { reason: values.reason } : {}),
    ...(values.force ? { force: true } : {}),
    ...(values.via === 'arm' ? { via: 'arm' } : {}),
  });
  let status: number;
  let text: string;
  try {
    const client = new HttpClient({ proxy: values.relay === undefined ? 'none' : 'env', maxSockets: 1 });
    const res = await client
      .request(`${base}/v1/approvals`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...signatureHeaders([key], `cli_${randomUUID()}`, body) },
        body,
        signal: AbortSignal.timeout(30_000),
        maxBodyBytes: 64 * 1024,
        onOverflow: 'destroy',
      })
      .finally(() => client.close());
    status = res.status;
    text = res.bytes.toString('utf8');
  } catch (err) {
    process.stderr.write(
      `se-bridge approve: cannot reach ${where}: ${(err as { code?: string }).code ?? String(err)}${values.relay === undefined ? ' (is se-bridge run running?)' : ''}\n`,
    );
    return EXIT.failure;
  }
  if (values.json) process.stdout.write(`${text}\n`);
  const parsed = JSON.parse(text) as {
    status?: string;
    approvedBy?: string;
    via?: string;
    forced?: boolean;
    past?: string[];
    warning?: string;
    error?: { code: string; message: string };
  };
  if (status === 200) {
    if (!values.json)
      process.stdout.write(
        parsed.status === 'approved'
          ? `${positionals[0]}: approved${parsed.forced ? ` past ${parsed.past?.join(' and ') || 'the fleet budget'}` : ''}${parsed.warning ? ` (${parsed.warning})` : ''}\n`
          : `${positionals[0]}: already approved by ${parsed.approvedBy} (${parsed.via})\n`,
      );
    return EXIT.ok;
  }
  if (parsed.status === 'held' && !values.json) {
    const past = values.relay === undefined || values.via === 'arm' ? ' (--force --reason TEXT approves past it)' : '';
    process.stderr.write(`se-bridge approve: held: ${parsed.error?.message ?? ''}${past}\n`);
    return EXIT.failure;
  }
  if (!values.json) process.stderr.write(`se-bridge approve: ${status} ${parsed.error?.code ?? ''}: ${parsed.error?.message ?? text}\n`);
  return EXIT.failure;
}

type Values = Record<string, string | boolean | undefined>;
interface Target {
  readonly key: Buffer;
  readonly base: string;
  readonly where: string;
}

/** daemonTarget: the running daemon's approval server, from its configuration. */
async function daemonTarget(values: Values): Promise<Target | null> {
  if (values.vm !== undefined || values.via !== undefined) throw new UsageError('--vm and --via go with --relay');
  const files = { config: values.config as string | undefined, 'env-file': values['env-file'] as string | undefined };
  const loaded = await loadOrReport(files, needs.sections('approval', 'server'));
  if (loaded === null) return null;
  const key = loaded.config.approval.key;
  if (key === null) {
    process.stderr.write(`${loaded.path}: approval.secret is not set, so the daemon runs no approval server to ask\n`);
    return null;
  }
  const listen = loaded.config.server.listen.replace(/^0\.0\.0\.0:/, '127.0.0.1:').replace(/^\[::\]:/, '[::1]:');
  return { key, base: `http://${listen}`, where: `the approval server at ${listen}` };
}

/** relayTarget: the fleet's relay, its API secret from the environment. */
function relayTarget(values: Values): Target | null {
  const relay = String(values.relay);
  if (!/^https?:\/\/[^/]+/.test(relay)) throw new UsageError("--relay must be the relay's URL (https://approvals.example.com)");
  if (typeof values.vm !== 'string' || values.vm === '') throw new UsageError("--relay needs --vm <the VM's resource id, or its name>");
  if (values.via !== undefined && values.via !== 'arm') throw new UsageError('--via takes arm (through Resource Manager)');
  if (values.force && values.via !== 'arm')
    throw new UsageError(
      "--force goes with the VM's own approval server, or with --via arm: through the VM's bridge, its budget is its own",
    );
  const secret = whsec.safeParse(process.env.SE_BRIDGE_RELAY_API_SECRET ?? '');
  if (!secret.success) {
    process.stderr.write("se-bridge approve: SE_BRIDGE_RELAY_API_SECRET must hold one of the relay's apiSecrets (whsec_…)\n");
    return null;
  }
  return { key: keyOf(secret.data), base: relay.replace(/\/+$/, ''), where: `the relay at ${relay}` };
}
