/**
 * buildTargets creates every configured sink (or, in a dry run, a noop sink in its place) and
 * describes it for the dispatcher: its delivery policy, its largest batch, its filter, and
 * whether it is a preparation hook. When one sink cannot be created, those already created
 * are closed and the error goes up.
 */
import type { Logger } from 'pino';
import type { SinkConfig } from '../config/schema.ts';
import type { DispatchTarget } from '../delivery/dispatcher.ts';
import type { ApprovalLinks } from '../sinks/contract.ts';
import { noopSink } from '../sinks/noop.ts';
import { sinkModuleOf } from '../sinks/registry.ts';
import type { Store } from '../store/store.ts';

export interface TargetContext {
  readonly logger: Logger;
  readonly stdout: NodeJS.WritableStream;
  readonly store: Store;
  readonly approval: ApprovalLinks | undefined;
  readonly dryRun: boolean;
}

export async function buildTargets(sinks: readonly SinkConfig[], ctx: TargetContext): Promise<DispatchTarget[]> {
  const targets: DispatchTarget[] = [];
  try {
    for (const sc of sinks) {
      const module = await sinkModuleOf(sc);
      const sink = ctx.dryRun
        ? noopSink(sc.name, ctx.logger)
        : await module.create(sc, {
            logger: ctx.logger.child({ sink: sc.name }),
            stdout: ctx.stdout,
            state: ctx.store.sinkState(sc.name),
            ...(ctx.approval ? { approval: ctx.approval } : {}),
          });
      targets.push({
        name: sc.name,
        type: sc.type,
        sink,
        delivery: sink.attemptTimeoutMs === undefined ? sc.delivery : { ...sc.delivery, timeoutMs: sink.attemptTimeoutMs },
        maxBatchSize: sink.maxBatchSize ?? module.maxBatchSize,
        filter: sc.filter,
        prepare: sc.type === 'exec' && sc.prepare,
      });
    }
  } catch (err) {
    await Promise.all(targets.map((t) => t.sink.close().catch(() => undefined)));
    throw err;
  }
  return targets;
}
