/**
 * exec sink: runs a local command per event — argv form, no shell — with the CloudEvent JSON
 * on stdin and its main fields in environment variables. Exit code 0 means delivered; any
 * other code is retried under the delivery policy (preparation scripts should be idempotent);
 * a command that cannot be started is rejected. A run that outlives `timeoutMs` (or is aborted
 * at shutdown) is killed with its whole process group (SIGTERM, then SIGKILL after a grace; on
 * Windows its process tree), as kit's killTree does it.
 *
 * `prepare: true` makes it a preparation hook: rules with `approveAfterHooks` approve an event
 * once every preparation hook for it has succeeded (drain, checkpoint, leave the load
 * balancer, then approve). Recovery hooks are exec sinks filtered on `completed`.
 */
import { spawn } from 'node:child_process';
import { isBatchFile, windowsLaunch } from './windows.ts';
import { z } from 'zod';
import {
  type BridgeEvent,
  delivered,
  deliveredWith,
  oneByOne,
  BridgeError,
  type Outcome,
  reject,
  retry,
  sinkBase,
  type SinkModule,
  transitionOf,
} from '../../src/api.ts';
import { killTree, ownGroup } from '../../src/kit.ts';

export const configSchema = z.strictObject({
  type: z.literal('exec'),
  ...sinkBase,
  command: z
    .array(z.string().min(1))
    .min(1)
    .superRefine((command, ctx) => {
      // a batch file runs through cmd.exe, which ends its line at a line break, quoted or not
      if (!isBatchFile(command[0] ?? '')) return;
      command.forEach((arg, i) => {
        if (/[\r\n]/.test(arg))
          ctx.addIssue({ code: 'custom', path: [i], message: 'a batch file (.cmd, .bat) cannot take a line break in an argument' });
      });
      if (command[0]!.includes('"')) ctx.addIssue({ code: 'custom', path: [0], message: "a batch file's path cannot hold a double quote" });
    })
    .describe('The program and its arguments (no shell; a .cmd or .bat file on Windows through cmd.exe, quoted by its rules).'),
  prepare: z.boolean().default(false).describe('A preparation hook: gates `approveAfterHooks`.'),
  timeoutMs: z
    .number()
    .int()
    .min(100)
    .max(24 * 3600_000)
    .default(600_000)
    .describe('How long one run may take before its process group is killed.'),
  cwd: z.string().min(1).optional().describe('Working directory.'),
  drill: z
    .boolean()
    .default(false)
    .describe('Run it for drills too (se-bridge drill), with SE_DRILL=1; false: a drill skips it, delivered as skipped.'),
  env: z
    .record(
      z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name'),
      z.string().refine((v) => !v.includes('\0'), 'must not contain a NUL character'),
    )
    .default({})
    .describe(
      'Extra environment variables (the run gets PATH, HOME, LANG, TZ and, on Windows, the system folders from the bridge, these, and SE_*).',
    ),
});
export type ExecConfig = z.infer<typeof configSchema>;

const TAIL = 2048;
/** The longest value of one SE_* variable: the whole event is on stdin, however large. */
export const MAX_ENV_VALUE_BYTES = 4096;
/** How long the output of a command that has exited may still be read (a background child may hold the pipes). */
const DRAIN_MS = 100;
const PASS_ENV = [
  'PATH',
  'HOME',
  'LANG',
  'TZ',
  'SystemRoot',
  'TEMP',
  'TMP',
  'USERPROFILE',
  'ComSpec',
  'PATHEXT',
  'windir',
  'SystemDrive',
  'ProgramData',
];

/**
 * eventEnv exposes the event's main fields to the command. A value over MAX_ENV_VALUE_BYTES is
 * cut (a document with 100,000 Resources would otherwise fail every run with E2BIG) and named
 * in SE_ENV_TRUNCATED; a value holding a NUL cannot be an environment value at all, so it is
 * left out and named in SE_ENV_OMITTED. The full event is always on stdin.
 */
function eventEnv(e: BridgeEvent): Record<string, string> {
  const out: Record<string, string> = {};
  const truncated: string[] = [];
  const omitted: string[] = [];
  for (const [key, value] of Object.entries(rawEventEnv(e))) {
    if (value.includes('\0')) {
      omitted.push(key);
    } else if (Buffer.byteLength(value) > MAX_ENV_VALUE_BYTES) {
      out[key] = cutUtf8(value, MAX_ENV_VALUE_BYTES);
      truncated.push(key);
    } else {
      out[key] = value;
    }
  }
  if (truncated.length > 0) out.SE_ENV_TRUNCATED = truncated.join(',');
  if (omitted.length > 0) out.SE_ENV_OMITTED = omitted.join(',');
  return out;
}

/** cutUtf8 shortens text to at most `max` UTF-8 bytes without splitting a character. */
function cutUtf8(text: string, max: number): string {
  const cut = Buffer.from(text, 'utf8').subarray(0, max).toString('utf8');
  return cut.endsWith('\uFFFD') ? cut.slice(0, -1) : cut;
}

function rawEventEnv(e: BridgeEvent): Record<string, string> {
  const d = e.data;
  return {
    SE_CE_ID: e.id,
    SE_CE_TYPE: e.type,
    SE_TRANSITION: transitionOf(e),
    SE_EVENT_ID: d.eventId,
    SE_EVENT_TYPE: d.eventType,
    SE_EVENT_STATUS: d.eventStatus,
    SE_EVENT_SOURCE: d.eventSource,
    SE_NOT_BEFORE: d.notBefore ?? '',
    SE_DURATION_SECONDS: String(d.durationInSeconds),
    SE_RESOURCES: d.resources.join(','),
    SE_AFFECTS_THIS_VM: String(d.affectsThisVm),
    SE_VM_NAME: d.vm.name,
    SE_DESCRIPTION: d.description,
    ...(e.drill === true ? { SE_DRILL: '1' } : {}),
  };
}

export function runOnce(config: ExecConfig, event: BridgeEvent, signal: AbortSignal): Promise<Outcome> {
  return new Promise((resolve) => {
    const base = Object.fromEntries(PASS_ENV.filter((k) => process.env[k] !== undefined).map((k) => [k, process.env[k]!]));
    let child;
    try {
      // on Windows a batch file starts through cmd.exe, its arguments quoted (windows.ts)
      const launch = process.platform === 'win32' ? windowsLaunch(config.command) : null;
      child = spawn(launch?.file ?? config.command[0]!, launch?.args ?? config.command.slice(1), {
        cwd: config.cwd,
        env: { ...base, ...config.env, ...eventEnv(event) },
        stdio: ['pipe', 'pipe', 'pipe'],
        ...ownGroup,
        windowsHide: true,
        windowsVerbatimArguments: launch?.verbatim ?? false,
      });
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      resolve(
        reject(`cannot start ${config.command[0]}: ${e instanceof BridgeError ? `${e.code}: ${e.message}` : (e.code ?? String(err))}`),
      );
      return;
    }
    let tail = '';
    const keep = (c: Buffer) => {
      tail = (tail + c.toString('utf8')).slice(-TAIL);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    let settled = false;
    let killedFor: string | null = null;
    const finish = (o: Outcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      resolve(o);
    };
    const kill = (why: string) => {
      killedFor = why;
      if (child.pid !== undefined) killTree(child.pid);
    };
    const timer = setTimeout(() => kill(`timed out after ${config.timeoutMs} ms`), config.timeoutMs);
    const onAbort = () => kill('aborted');
    signal.addEventListener('abort', onAbort, { once: true });
    child.on('error', (err: NodeJS.ErrnoException) => {
      const code = err.code ?? 'ERROR';
      finish(
        code === 'ENOENT' || code === 'EACCES'
          ? reject(`cannot start ${config.command[0]}: ${code}`)
          : retry(`${config.command[0]}: ${code}`),
      );
    });
    // Settle when the command exits, not when its output closes: a hook that starts a service
    // in the background exits 0 while the service still holds the pipes. What it printed is read
    // for a moment more (for the failure reason), then no longer.
    child.on('exit', (code, sig) => {
      const settle = () => {
        child.stdout.destroy();
        child.stderr.destroy();
        const last = tail.trim().split('\n').slice(-3).join(' | ');
        if (killedFor !== null) return finish(retry(`${config.command[0]} ${killedFor}; process group killed`));
        if (code === 0) return finish(delivered);
        finish(retry(`${config.command[0]} exited with ${code !== null ? `code ${code}` : `signal ${sig}`}${last ? `: ${last}` : ''}`));
      };
      const drained = setTimeout(settle, DRAIN_MS);
      child.once('close', () => {
        clearTimeout(drained);
        settle();
      });
    });
    child.stdin.on('error', () => undefined); // a command that does not read stdin
    child.stdin.end(`${JSON.stringify(event)}\n`);
  });
}

export const execSink: SinkModule<ExecConfig, typeof configSchema> = {
  type: 'exec',
  configSchema,
  codes: { EXEC_UNQUOTABLE: 'a batch file cannot be given an argument holding a line break (cmd ends its line there)' },
  maxBatchSize: 1,
  create(config) {
    return {
      attemptTimeoutMs: config.timeoutMs + 5000,
      async send(events, { signal }) {
        // a hook not written for drills never runs for one: it might do what cannot be undone
        return await oneByOne(events, async (e) =>
          e.drill === true && !config.drill
            ? deliveredWith('skipped: a drill (drill: true runs this hook for drills)')
            : runOnce(config, e, signal),
        );
      },
      async close() {},
    };
  },
};
