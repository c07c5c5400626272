#!/usr/bin/env node
/**
 * se-bridge: verbs map to command modules; nothing else lives here.
 * Exit codes: 0 ok, 1 runtime failure, 2 usage or configuration error.
 */
// first: before any schema is built (zod-jitless.ts)
import '../lib/zod-jitless.ts';
import { EXIT, UsageError } from './common.ts';
import { usageOf, wantsHelp } from './usage.ts';
import { VERSION } from '../lib/version.ts';
import { nodeVersionProblem } from '../lib/node-version.ts';
import { messageOf } from '../lib/errors.ts';

const USAGE = `Usage: se-bridge <command> [options]

Commands:
  run [--config FILE] [--env-file FILE] [--dry-run]
                                           run the daemon
  demo [--duration S] [--state-dir DIR]    simulator + bridge + every scenario, on this machine
  demo --fleet                             the fleet: relay approvals, budgets, health gates, calendars, the fleet view
  simulate [--listen HOST:PORT] [--scenario NAME|all] [--timing dev|real] [--vm-name NAME] [--servicebus HOST:PORT]
                                           run the IMDS simulator alone
  validate [--config FILE] [--env-file FILE] [--relay]
                                           check a configuration file, a bridge's or a relay's (exit 2 lists every problem)
  status [--config FILE] [--env-file FILE] [--json]
                                           read IMDS once: current events and who this VM is
  calendar [--from DATE|TIME] [--days N] [--config FILE] [--env-file FILE] [--json]
                                           the calendar now, and its windows and blackouts of the coming days
  approve EVENTID [--config FILE] [--env-file FILE] [--reason TEXT] [--force] [--json]
                                           approve an event through the running daemon (--force: past the fleet budget or a blackout)
  approve EVENTID --relay URL --vm ID [--via arm [--force]] [--reason TEXT] [--json]
                                           approve through the fleet's relay (--via arm: through Resource Manager)
  dead-letters list|replay [--sink NAME] [--config FILE] [--env-file FILE] [--json]
                                           inspect or re-queue events that could not be delivered
  relay [--config FILE] [--env-file FILE]  the fleet's approval endpoint (Service Bus; see docs/fleet-approvals.md)
  fleet keys | link-key --vm ID | public-key
                                           keys of fleet approvals
  fleet status [--config FILE | --relay-config FILE] [--env-file FILE] [--json]
                                           the fleet budget's group (with the relay's file: every group, and what is unwatched)
  fleet digest --relay-config FILE [--env-file FILE] [--dry-run] [--json]
                                           the fleet's chat digest (the relay's digest), posted now
  fleet forget VM [--force] [--config FILE] [--env-file FILE]
                                           remove the record of a member gone for good from the group
  fleet pause --reason TEXT [--until TIME] [--config FILE] [--env-file FILE] | fleet resume
                                           stop the group's early approvals (a forced one goes past), or let them go on
  drill [--type TYPE] [--notice D] [--duration D] [--source S] [--sink NAME ...] [--prepare rehearse|real]
        [--cancel|--end] [--config FILE] [--env-file FILE] [--json]
                                           play one maintenance through the running daemon, end to end; nothing is asked of Azure
  prepare --dry-run [--sink NAME] [--notice DURATION] [--config FILE] [--env-file FILE] [--json]
                                           what a preparation would do now (a drain: dry-run evictions); nothing changes
  template test --sink NAME [--config FILE] [--env-file FILE] [--scenario NAME]
                                           render a webhook sink's templates for a scenario
  schema                                   print the configuration's JSON Schema
  --version                                print the version

Configuration: --config, else $SE_BRIDGE_CONFIG, else config/bridge.yaml, else /etc/se-bridge/bridge.yaml.
Secrets: \${NAME} expands from your environment, then from --env-file (default: the installed
service's /etc/se-bridge/se-bridge.env, when it exists); a command resolves only what it uses.
Every command answers --help (also: se-bridge help COMMAND).
Exit codes: 0 ok, 1 runtime failure, 2 usage or configuration error.
`;

const COMMANDS: Record<string, () => Promise<{ main(argv: string[]): Promise<number> }>> = {
  run: () => import('./run.ts'),
  demo: () => import('./demo.ts'),
  simulate: () => import('./simulate.ts'),
  validate: () => import('./validate.ts'),
  status: () => import('./status.ts'),
  calendar: () => import('./calendar.ts'),
  'dead-letters': () => import('./dead-letters.ts'),
  approve: () => import('./approve.ts'),
  schema: () => import('./schema.ts'),
  relay: () => import('./relay.ts'),
  fleet: () => import('./fleet.ts'),
  template: () => import('./template.ts'),
  prepare: () => import('./prepare.ts'),
  drill: () => import('./drill.ts'),
};

async function main(argv: string[]): Promise<number> {
  const [verb, ...rest] = argv;
  // before anything else: an older Node fails later, and obscurely
  const tooOld = nodeVersionProblem();
  if (tooOld !== null) {
    process.stderr.write(`${tooOld}\n`);
    return EXIT.usage;
  }
  if (verb === 'help' && rest.length > 0 && COMMANDS[rest[0]!] !== undefined) {
    process.stdout.write(usageOf(rest[0]!, rest.slice(1)) ?? USAGE);
    return EXIT.ok;
  }
  if (verb === undefined || verb === 'help' || verb === '--help' || verb === '-h') {
    process.stdout.write(USAGE);
    return verb === undefined ? EXIT.usage : EXIT.ok;
  }
  if (verb === '--version' || verb === '-V' || verb === '-v' || verb === 'version') {
    process.stdout.write(`${VERSION}\n`);
    return EXIT.ok;
  }
  const load = COMMANDS[verb];
  if (load === undefined) {
    process.stderr.write(`se-bridge: unknown command "${verb}"\n\n${USAGE}`);
    return EXIT.usage;
  }
  if (wantsHelp(rest)) {
    process.stdout.write(usageOf(verb, rest) ?? USAGE);
    return EXIT.ok;
  }
  try {
    return await (await load()).main(rest);
  } catch (err) {
    if (err instanceof UsageError || (err as { code?: unknown }).code === 'USAGE') {
      process.stderr.write(`se-bridge ${verb}: ${messageOf(err)}\n\n${usageOf(verb, rest) ?? USAGE}`);
      return EXIT.usage;
    }
    throw err;
  }
}

/** How long a finished command may take to let go of its last handles before it is ended. */
const EXIT_GRACE_MS = 3000;

// a reader that goes away (`se-bridge schema | head`) ends the command quietly, as for any Unix tool
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(process.exitCode ?? EXIT.ok);
    throw err;
  });
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
    setTimeout(() => process.exit(code), EXIT_GRACE_MS).unref();
  },
  (err: unknown) => {
    const e = err as { code?: string; message?: string };
    process.stderr.write(`se-bridge: ${e.code ? `${e.code}: ` : ''}${e.message ?? String(err)}\n`);
    process.exit(EXIT.failure);
  },
);
