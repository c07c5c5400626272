/**
 * The daemon's two HTTP endpoints: /metrics, /livez and /readyz on `observability.listen`
 * (a failure to listen is logged loudly and the bridge goes on without them: maintenance
 * handling matters more than metrics), and the approval server on `server.listen`, started
 * when `approval.secret` is set.
 */
import type { Logger } from 'pino';
import { ApprovalServer } from '../approval/server.ts';
import type { ApprovalService } from '../approval/service.ts';
import type { BridgeConfig } from '../config/schema.ts';
import { errorFields } from '../lib/errors.ts';
import type { Metrics } from '../observability/metrics.ts';
import { ObservabilityServer, type Readiness } from '../observability/server.ts';
import type { ReplayCache } from '../store/store.ts';
import type { BridgeState } from '../imds/view.ts';

export interface EndpointsOptions {
  readonly config: BridgeConfig;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly readiness: () => Readiness;
  readonly approvals: ApprovalService;
  readonly replay: ReplayCache;
  /** The read model: read by the approval server, and `approvalServerUrl` written here once it listens. */
  readonly state: BridgeState;
}

export class Endpoints {
  readonly #o: EndpointsOptions;
  #observability: ObservabilityServer | null = null;
  #approval: ApprovalServer | null = null;
  observabilityUrl: string | null = null;

  constructor(options: EndpointsOptions) {
    this.#o = options;
  }

  async startObservability(): Promise<void> {
    const { config, logger } = this.#o;
    const at = config.observability.at;
    if (at === null) return;
    const server = new ObservabilityServer(this.#o.metrics, this.#o.readiness);
    try {
      this.observabilityUrl = await server.listen(at.host, at.port);
      this.#observability = server;
      logger.info({ url: this.observabilityUrl }, 'metrics and health endpoints listening');
    } catch (err) {
      logger.error(
        { ...errorFields(err), listen: config.observability.listen },
        'cannot serve /metrics, /livez, /readyz; continuing without them',
      );
    }
  }

  async startApproval(): Promise<void> {
    const { config, logger } = this.#o;
    const key = config.approval.key;
    if (key === null) return;
    this.#approval = new ApprovalServer({
      service: this.#o.approvals,
      replay: this.#o.replay,
      keys: [key],
      tokenKey: key,
      ...(config.approval.slack ? { slack: config.approval.slack } : {}),
      view: this.#o.state,
      logger,
      rate: config.server.rateLimit,
      maxConnections: config.server.maxConnections,
      maxConnectionsPerClient: config.server.maxConnectionsPerClient,
      trustedProxies: config.server.trustedProxies,
      fleet: config.fleet !== undefined,
    });
    const url = await this.#approval.listen(config.server.at.host, config.server.at.port);
    this.#o.state.approvalServerUrl = url;
    logger.info({ url }, 'approval server listening');
  }

  async closeApproval(): Promise<void> {
    await this.#approval?.close();
  }

  async closeObservability(): Promise<void> {
    await this.#observability?.close();
  }
}
