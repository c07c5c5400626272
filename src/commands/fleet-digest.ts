/**
 * se-bridge fleet digest --relay-config FILE [--env-file FILE] [--dry-run] [--json]: the fleet's
 * digest (the relay's `digest`) made from its store now and posted to its chat sinks as a new
 * message, which the relays' scheduled looks then update in place until the next period. With
 * --dry-run it is printed and posted nowhere (and needs no key but the store's).
 */
import { randomUUID } from 'node:crypto';
import { createLogger, scrub } from '../lib/log.ts';
import { FleetReader } from '../fleet/view/snapshot.ts';
import { digestText } from '../present/digest.ts';
import { visible } from '../present/text-line.ts';
import { relaySecrets } from '../relay/config.ts';
import { digestPoster, fleetDigest, type DigestLook } from '../relay/digest.ts';
import { RelaySinks } from '../relay/sinks.ts';
import { EXIT, needs } from './common.ts';
import type { Needs } from '../config/load.ts';
import { failed } from './fleet-group.ts';
import { loadRelayOrReport } from './relay-file.ts';

/** shown: text from the store (names, reasons) as text, never as terminal control, line by line. */
const shown = (text: string) => text.split('\n').map(visible).join('\n');

export async function digest(values: {
  'relay-config'?: string | undefined;
  'env-file'?: string | undefined;
  'dry-run'?: boolean | undefined;
  json?: boolean | undefined;
}): Promise<number> {
  const dry = values['dry-run'] === true;
  // what a digest reads: the store; and to post it, its sinks and the key of its record
  const uses: Needs = (path, raw) =>
    needs.sections('fleet', 'digest')(path, raw) || (!dry && needs.sections('sinks', 'fleetKey', 'azure.recordKey')(path, raw));
  const loaded = await loadRelayOrReport({ config: values['relay-config'], 'env-file': values['env-file'] }, uses);
  if (loaded === null) return EXIT.usage;
  const { config, path } = loaded;
  if (config.fleet === undefined || config.digest === undefined) {
    process.stderr.write(
      `${path}: ${config.fleet === undefined ? 'fleet' : 'digest'} is not configured, so the relay has no digest to say\n`,
    );
    return EXIT.usage;
  }
  const f = config.fleet;
  const logger = createLogger({ level: config.log.level, destination: 'stderr', secrets: dry ? [] : relaySecrets(config) });
  const reader = new FleetReader({ store: f.store, timeoutMs: f.storeTimeoutMs, cacheMs: 0, budgets: f.groups });
  let sinks: RelaySinks | null = null;
  let poster: Awaited<ReturnType<typeof digestPoster>> = null;
  try {
    await reader.open();
    if (dry) {
      const d = fleetDigest(await reader.read(), config.digest, { afterSeconds: config.azure?.unwatchedAfterSeconds }, Date.now());
      process.stdout.write(values.json ? `${JSON.stringify({ digest: d }, null, 2)}\n` : `${shown(digestText(d))}\n`);
      return d.unread.length === 0 ? EXIT.ok : EXIT.failure;
    }
    sinks = await RelaySinks.create(config.sinks, logger, process.stderr);
    poster = await digestPoster(config, { reader, sinks, logger, by: `cli-${randomUUID()}` });
    if (poster === null) return EXIT.usage; // the key's absence is a problem of the file, said above
    const look: DigestLook = await poster.look('now');
    if (values.json) process.stdout.write(`${JSON.stringify({ digest: look.digest, sinks: look.sinks }, null, 2)}\n`);
    else {
      const lines = look.sinks.map((s) =>
        s.result === 'failed' ? `Not posted to ${s.name}: ${scrub(s.why ?? '', relaySecrets(config))}` : `Posted to ${s.name}.`,
      );
      if (look.sinks.length === 0) lines.push(`Not posted: ${notPosted(look)}.`);
      process.stdout.write(`${shown(digestText(look.digest))}\n\n${shown(lines.join('\n'))}\n`);
    }
    return digestExit(look);
  } catch (err) {
    return failed('fleet digest', err);
  } finally {
    await poster?.close();
    await sinks?.close();
    await reader.close();
  }
}

/** notPosted: why a look posted to no sink. */
function notPosted(look: DigestLook): string {
  return look.did === 'another'
    ? "another writer changed the digest's record at the same moment (a relay saying it, or another fleet digest): try again"
    : `nothing to post to (${look.did})`;
}

/** digestExit: 0 only when the digest was posted to every sink and says a store that was read; a look that posted nothing is a failure. */
export function digestExit(look: DigestLook): number {
  const all = look.sinks.length > 0 && look.sinks.every((s) => s.result !== 'failed');
  return all && look.digest.unread.length === 0 ? EXIT.ok : EXIT.failure;
}
