/**
 * buildTargets creates every configured sink (or, in a dry run, a noop sink in its place) and
 * describes it for the dispatcher: its delivery policy, its largest batch, its filter, and
 * whether it is a preparation hook. When one sink cannot be created, those already created
 * are closed and the error goes up, naming the sink (`sinks[2] (pd)`).
 *
 * A sink's `create` has a deadline: a module whose `create` never settles would otherwise leave
 * the daemon with nothing to wait for, and Node ends such a process with exit 0, which a
 * supervisor that restarts on failure takes for a clean stop.
 */
import type { Logger } from 'pino';
import type { SinkConfig } from '../config/schema.ts';
import type { DispatchTarget } from '../delivery/dispatcher.ts';
import type { ApprovalLinks, DrillMode, HealthView, ImdsReads, PreparationState, SinkMetrics } from '../sinks/contract.ts';
import type { VmIdentity } from '../imds/identity.ts';
import { noopSink } from './noop-sink.ts';
import { roleOf, sinkModuleOf } from '../registry/sinks.ts';
import type { SinkStates } from '../store/store.ts';
import { BridgeError, messageOf } from '../lib/errors.ts';
import { withDeadline } from '../lib/time.ts';

/** How long a sink's `create` may take before start-up fails. */
export const SINK_CREATE_DEADLINE_MS = 30_000;

export interface TargetContext {
  readonly logger: Logger;
  readonly stdout: NodeJS.WritableStream;
  /** Each sink's own memory in the store. */
  readonly sinkStates: SinkStates;
  readonly approval: ApprovalLinks | null;
  readonly dryRun: boolean;
  readonly vm: () => VmIdentity;
  readonly reads: ImdsReads;
  readonly metrics: SinkMetrics;
  readonly preparations: (eventId: string) => readonly PreparationState[];
  readonly drill: (eventId: string) => DrillMode | null;
  /** This VM's health checks, when configured. */
  readonly health?: HealthView | undefined;
  /** Default SINK_CREATE_DEADLINE_MS. */
  readonly createDeadlineMs?: number;
}

export async function buildTargets(sinks: readonly SinkConfig[], ctx: TargetContext): Promise<DispatchTarget[]> {
  const targets: DispatchTarget[] = [];
  try {
    const deadlineMs = ctx.createDeadlineMs ?? SINK_CREATE_DEADLINE_MS;
    for (const [i, sc] of sinks.entries()) {
      const where = `sinks[${i}] (${sc.name})`;
      const module = sinkModuleOf(sc);
      const sink = ctx.dryRun
        ? noopSink(sc.name, ctx.logger)
        : await withDeadline(
            module.create(sc, {
              logger: ctx.logger.child({ sink: sc.name }),
              stdout: ctx.stdout,
              state: ctx.sinkStates.of(sc.name),
              ...(ctx.approval ? { approval: ctx.approval } : {}),
              vm: ctx.vm,
              reads: ctx.reads,
              metrics: ctx.metrics,
              preparations: ctx.preparations,
              drill: ctx.drill,
              ...(ctx.health === undefined ? {} : { health: ctx.health }),
            }),
            deadlineMs,
            () => new BridgeError('SINK_CREATE_FAILED', `${where}: create() did not finish within ${deadlineMs / 1000} s`),
          ).catch((err: unknown) => {
            if (err instanceof BridgeError && err.code === 'SINK_CREATE_FAILED') throw err;
            throw new BridgeError('SINK_CREATE_FAILED', `${where}: ${messageOf(err)}`, { cause: err });
          });
      targets.push({
        name: sc.name,
        type: sc.type,
        sink,
        delivery: sink.attemptTimeoutMs === undefined ? sc.delivery : { ...sc.delivery, timeoutMs: sink.attemptTimeoutMs },
        maxBatchSize: sink.maxBatchSize ?? module.maxBatchSize,
        filter: sc.filter,
        ...roleOf(sc),
      });
    }
  } catch (err) {
    await closeTargets(targets);
    throw err;
  }
  return targets;
}

/** closeTargets closes every sink made, saying nothing of a close that fails (what built them failed already). */
export async function closeTargets(targets: readonly DispatchTarget[]): Promise<void> {
  await Promise.all(targets.map((t) => t.sink.close().catch(() => undefined)));
}

/** closingOnFailure: a rejection handler that closes the sinks made, then fails as before. */
export const closingOnFailure =
  (targets: readonly DispatchTarget[]) =>
  async (err: unknown): Promise<never> => {
    await closeTargets(targets);
    throw err;
  };
