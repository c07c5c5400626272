/**
 * attachInbox: the approval inbox as a feature of the daemon (daemon/feature.ts), when
 * `approval.inbox` is configured: it holds this VM's Service Bus session (its loop) and applies
 * the relay's approval commands through the daemon's approval service (given at start).
 */
import type { Logger } from 'pino';
import type { ApprovalService } from '../../approval/service.ts';
import type { BridgeView } from '../../imds/view.ts';
import type { Metrics } from '../../observability/metrics.ts';
import type { ReplayCache } from '../../store/replay.ts';
import type { InboxConfig } from './config.ts';
import { ApprovalInbox } from './inbox.ts';

export interface InboxContext {
  readonly config: { readonly approval: { readonly inbox?: InboxConfig | undefined } };
  readonly logger: Logger;
  readonly state: BridgeView;
  readonly replay: ReplayCache;
  readonly metrics: Metrics;
}

export function attachInbox(ctx: InboxContext) {
  const config = ctx.config.approval.inbox;
  if (config === undefined) return null;
  const inbox = new ApprovalInbox({
    config,
    replay: ctx.replay,
    logger: ctx.logger,
    view: ctx.state,
    onCommand: (result) => ctx.metrics.inboxCommands.inc({ result }),
    onConnected: (connected) => ctx.metrics.inboxConnected.set(connected ? 1 : 0),
  });
  return {
    name: 'inbox',
    details: () => inbox.status(),
    start: async (daemon: { readonly approvals: ApprovalService }) => inbox.use(daemon.approvals),
    run: (signal: AbortSignal) => inbox.run(signal),
    close: () => inbox.close(),
    status: () => inbox.status(),
  };
}
