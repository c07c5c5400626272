/**
 * se-bridge validate [--config FILE] [--env-file FILE] [--relay]: checks a bridge's configuration (exit 0 with
 * warnings on stderr, exit 2 listing every problem by path), or with --relay a relay's (its file:
 * --config, else $SE_BRIDGE_RELAY_CONFIG, else config/relay.yaml). A relay's file given to plain
 * `validate` is recognised by its keys and checked as one.
 */
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { configWarnings } from '../config/warnings.ts';
import { CONFIG_OPTIONS, EXIT, loadOrReport, parse, type ConfigValues } from './common.ts';
import { loadRelayOrReport } from './relay-file.ts';
import { templateLimitProblems } from './template.ts';
import { budgetText } from '../fleet/budget/config.ts';

export async function main(argv: string[]): Promise<number> {
  const { values } = parse(argv, { ...CONFIG_OPTIONS, relay: { type: 'boolean' } });
  if (values.relay === true || (values.config !== undefined && looksLikeRelay(values.config))) return validateRelay(values);
  const loaded = await loadOrReport(values);
  if (loaded === null) return EXIT.usage;
  const limits = await templateLimitProblems(loaded.config);
  if (limits.length > 0) {
    process.stderr.write(
      `${loaded.path}: ${limits.length} configuration problem${limits.length === 1 ? '' : 's'}:\n  ${limits.join('\n  ')}\n`,
    );
    return EXIT.usage;
  }
  const sinks = loaded.config.sinks.map((s) => `${s.name} (${s.type})`).join(', ') || 'none';
  for (const w of configWarnings(loaded.config)) process.stderr.write(`warning: ${w}\n`);
  process.stdout.write(`${loaded.path}: valid; sinks: ${sinks}\n`);
  // how the budget will count: a percentage comes to its slots only against the members alive then
  const fleet = loaded.config.fleet;
  if (fleet !== undefined && budgetText(fleet) !== null) process.stdout.write(`${budgetText(fleet)}\n`);
  return EXIT.ok;
}

async function validateRelay(values: ConfigValues): Promise<number> {
  const loaded = await loadRelayOrReport(values);
  if (loaded === null) return EXIT.usage;
  const c = loaded.config;
  const serves = c.bus === null ? 'no serviceBus: the fleet view only' : `queues ${c.bus.queue} and ${c.bus.replies}`;
  process.stdout.write(`${loaded.path}: valid relay configuration; listens on ${c.listen}; ${serves}\n`);
  return EXIT.ok;
}

/** looksLikeRelay: the file's top level has a relay's own keys and none of a bridge's. */
function looksLikeRelay(path: string): boolean {
  try {
    const doc = parseYaml(readFileSync(path, 'utf8')) as unknown;
    if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) return false;
    const keys = Object.keys(doc);
    // a relay's own keys (a relay of the fleet view alone has no serviceBus), and none only a bridge has
    const relayOnly = ['serviceBus', 'signingKey', 'fleetKey', 'readKeys', 'azure', 'replyWaitMs'];
    return keys.some((k) => relayOnly.includes(k)) && !keys.some((k) => ['imds', 'state', 'approval', 'server', 'identity'].includes(k));
  } catch {
    return false;
  }
}
