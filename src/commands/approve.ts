/**
 * se-bridge approve EVENTID: approve from the box itself, through the same path as every
 * other approval — a signed POST /v1/approvals to the running daemon's approval server.
 */
import { randomUUID } from 'node:crypto';
import { userInfo } from 'node:os';
import { HttpClient } from '../lib/http-client.ts';
import { signatureHeaders } from '../lib/standard-webhooks.ts';
import { CONFIG_OPTIONS, EXIT, loadOrReport, needs, parse, UsageError } from './common.ts';

export async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parse(
    argv,
    { ...CONFIG_OPTIONS, reason: { type: 'string' }, force: { type: 'boolean' }, json: { type: 'boolean' } },
    true,
  );
  if (positionals.length !== 1) throw new UsageError('expected one EventId');
  if (values.force && !values.reason)
    throw new UsageError('--force needs --reason: approving past the fleet budget or a blackout goes on the record');
  const loaded = await loadOrReport(values, needs.sections('approval', 'server'));
  if (loaded === null) return EXIT.usage;
  const { config } = loaded;
  const key = config.approval.key;
  if (key === null) {
    process.stderr.write(`${loaded.path}: approval.secret is not set, so the daemon runs no approval server to ask\n`);
    return EXIT.usage;
  }
  const listen = config.server.listen.replace(/^0\.0\.0\.0:/, '127.0.0.1:').replace(/^\[::\]:/, '[::1]:');
  const body = JSON.stringify({
    eventId: positionals[0],
    approver: `cli:${userInfo().username}`,
    ...(values.reason ? { reason: values.reason } : {}),
    ...(values.force ? { force: true } : {}),
  });
  let status: number;
  let text: string;
  try {
    const client = new HttpClient({ proxy: 'none', maxSockets: 1 });
    const res = await client
      .request(`http://${listen}/v1/approvals`, {
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
      `se-bridge approve: cannot reach the approval server at ${listen}: ${(err as { code?: string }).code ?? String(err)} (is se-bridge run running?)\n`,
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
    process.stderr.write(`se-bridge approve: held: ${parsed.error?.message ?? ''} (--force --reason TEXT approves past it)\n`);
    return EXIT.failure;
  }
  if (!values.json) process.stderr.write(`se-bridge approve: ${status} ${parsed.error?.code ?? ''}: ${parsed.error?.message ?? text}\n`);
  return EXIT.failure;
}
