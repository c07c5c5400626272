/**
 * Metrics: prefix `sebridge_`, counters end in `_total`, durations in `_seconds`; Node's
 * process metrics under their conventional unprefixed names (see prometheus.ts).
 * One registry per bridge (so tests and embedders never share counters). Gauges that mirror the
 * store (outbox depth, dead letters) are read when scraped, so they are never stale.
 */
import { isDrill } from '../imds/drill-id.ts';
import { VERSION } from '../lib/version.ts';
import { Counter, Gauge, Histogram, Registry, processMetrics } from '../lib/prometheus.ts';
import type { Outbox } from '../store/store.ts';
import type { EventsDocument } from '../imds/wire.ts';
import type { SinkMetrics } from '../sinks/contract.ts';
import { FleetMetrics } from './fleet-metrics.ts';

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];
/** Preparations take seconds to many minutes (a drain waits for pods to stop). */
const PREPARE_BUCKETS = [1, 5, 10, 30, 60, 120, 300, 600, 900, 1800, 3600];

export class Metrics {
  readonly registry = new Registry();
  readonly polls: Counter;
  readonly imdsDuration: Histogram;
  readonly incarnation: Gauge;
  readonly events: Gauge;
  readonly transitions: Counter;
  readonly deliveries: Counter;
  readonly deliveryDuration: Histogram;
  readonly changeToDelivery: Histogram;
  readonly approvals: Counter;
  readonly consecutiveFailures: Gauge;
  readonly inboxConnected: Gauge;
  readonly inboxCommands: Counter;
  readonly prepareSeconds: Histogram;
  readonly prepares: Counter;
  readonly fleetSlots: Gauge;
  readonly fleetHeld: Counter;
  readonly fleetStoreErrors: Counter;
  /** The fleet budget's numbers per group (fleet-metrics.ts). */
  readonly fleet: FleetMetrics;
  /** The families sinks asked for by name (SinkMetrics). */
  readonly #sinkFamilies = new Map<string, Counter | Gauge | Histogram>();

  constructor(outbox?: Outbox) {
    const r = this.registry;
    // Node's process metrics keep their conventional names (process_*, nodejs_*), which every
    // Prometheus client library uses and standard dashboards expect; only ours carry sebridge_
    processMetrics(r);
    r.register(new Gauge('sebridge_build_info', 'Build information (always 1).', ['version', 'node'])).set(
      { version: VERSION, node: process.version },
      1,
    );
    this.polls = r.register(
      new Counter('sebridge_polls_total', 'Scheduled Events reads by result (changed, unchanged, error) and error code.', [
        'result',
        'code',
      ]),
    );
    this.imdsDuration = r.register(
      new Histogram(
        'sebridge_imds_request_duration_seconds',
        'IMDS request duration by request (scheduledevents, start, compute) and outcome (HTTP status or error code).',
        ['request', 'outcome'],
        LATENCY_BUCKETS,
      ),
    );
    this.incarnation = r.register(new Gauge('sebridge_document_incarnation', 'DocumentIncarnation of the last document read.'));
    this.events = r.register(new Gauge('sebridge_events', 'Events IMDS currently lists, by type and status.', ['type', 'status']));
    this.transitions = r.register(
      new Counter(
        'sebridge_transitions_total',
        'Transitions observed, by kind (scheduled, updated, started, completed, canceled, approved, fleet.collision, fleet.paused) and whether a drill made them.',
        ['transition', 'drill'],
      ),
    );
    this.deliveries = r.register(
      new Counter('sebridge_deliveries_total', 'Delivery attempts by sink and outcome (delivered, retry, dead-letter).', [
        'sink',
        'outcome',
      ]),
    );
    this.deliveryDuration = r.register(
      new Histogram('sebridge_delivery_duration_seconds', 'Duration of one delivery attempt, by sink.', ['sink'], LATENCY_BUCKETS),
    );
    this.changeToDelivery = r.register(
      new Histogram(
        'sebridge_change_to_delivery_seconds',
        'Time from an IMDS change being observed (committed) to its delivery, by sink.',
        ['sink'],
        LATENCY_BUCKETS,
      ),
    );
    this.approvals = r.register(
      new Counter('sebridge_approvals_total', 'Approval attempts by path (policy, hooks, api, link, slack) and result.', ['via', 'result']),
    );
    this.inboxConnected = r.register(
      new Gauge(
        'sebridge_inbox_connected',
        "Whether the approval inbox holds this VM's Service Bus session (1) or not (0, also without an inbox).",
      ),
    );
    this.inboxCommands = r.register(
      new Counter(
        'sebridge_inbox_commands_total',
        'Approval commands from the inbox, by result (approved, already-approved, not-approvable, failed, dead-lettered).',
        ['result'],
      ),
    );
    this.prepareSeconds = r.register(
      new Histogram(
        'sebridge_prepare_seconds',
        'Time from a Scheduled event being observed to its preparation being done, by sink.',
        ['sink'],
        PREPARE_BUCKETS,
      ),
    );
    this.prepares = r.register(
      new Counter('sebridge_prepare_total', 'Preparation results by sink and outcome (done, failed, undone).', ['sink', 'outcome']),
    );
    this.fleetSlots = r.register(
      new Gauge('sebridge_fleet_slots_held', "The fleet group's slots held, as last read: by this member (self) and by the others.", [
        'holder',
      ]),
    );
    this.fleetHeld = r.register(
      new Counter(
        'sebridge_fleet_approvals_held_total',
        'Early approvals the fleet budget held, by path (policy, hooks, api, link, slack).',
        ['via'],
      ),
    );
    this.fleetStoreErrors = r.register(
      new Counter('sebridge_fleet_store_errors_total', "Failed reads and writes of the fleet budget's store, by operation.", ['operation']),
    );
    this.fleet = new FleetMetrics(r);
    this.consecutiveFailures = r.register(
      new Gauge('sebridge_imds_consecutive_failures', 'IMDS reads failed in a row (0 when the last read succeeded).'),
    );
    if (outbox !== undefined) {
      const depth = new Gauge('sebridge_outbox_depth', 'Events waiting for delivery, by sink.', ['sink']);
      r.register(depth, () => {
        depth.reset();
        try {
          for (const [sink, n] of outbox.depth()) depth.set({ sink }, n);
        } catch {
          /* the store is closed: nothing to report */
        }
      });
      const dead = new Gauge('sebridge_dead_letters', 'Dead letters kept, by sink.', ['sink']);
      r.register(dead, () => {
        dead.reset();
        try {
          const counts = new Map<string, number>();
          for (const d of outbox.deadLetters()) counts.set(d.sink, (counts.get(d.sink) ?? 0) + 1);
          for (const [sink, n] of counts) dead.set({ sink }, n);
        } catch {
          /* the store is closed */
        }
      });
    }
  }

  /** sinkMetrics hands sinks their own series: one family per name, whichever sink asks first registers it. */
  sinkMetrics(): SinkMetrics {
    const family = <F extends Counter | Gauge | Histogram>(name: string, kind: F['kind'], make: () => F): F => {
      if (!/^sebridge_[a-z0-9_]+$/.test(name)) throw new Error(`a sink's metric name must match sebridge_[a-z0-9_]+, got ${name}`);
      const known = this.#sinkFamilies.get(name);
      if (known !== undefined) {
        if (known.kind !== kind) throw new Error(`metric ${name} is already a ${known.kind}`);
        return known as F;
      }
      const made = this.registry.register(make());
      this.#sinkFamilies.set(name, made);
      return made;
    };
    return {
      counter: (name, help, labels) => family(name, 'counter', () => new Counter(name, help, labels)),
      gauge: (name, help, labels) => family(name, 'gauge', () => new Gauge(name, help, labels)),
      histogram: (name, help, labels, buckets) => family(name, 'histogram', () => new Histogram(name, help, labels, buckets)),
    };
  }

  /**
   * healthChecks registers the health checks' series, only when they are configured (a gauge of 0
   * on a VM that checks nothing would read as unhealthy), and returns what one check sets.
   */
  healthChecks(): (healthy: boolean) => void {
    const gauge = this.registry.register(
      new Gauge('sebridge_health_healthy', "1 while this VM's health checks pass (the last check), 0 while they do not."),
    );
    const checks = this.registry.register(new Counter('sebridge_health_checks_total', 'Health checks run, by result.', ['result']));
    return (healthy) => {
      gauge.set(healthy ? 1 : 0);
      checks.inc({ result: healthy ? 'healthy' : 'unhealthy' });
    };
  }

  /** outcome counts one delivery's outcome and its duration, and for a delivery, how long after the change it arrived. */
  outcome(report: { readonly sink: string; readonly outcome: string; readonly durationMs: number; readonly createdAt: number }): void {
    this.deliveries.inc({ sink: report.sink, outcome: report.outcome });
    this.deliveryDuration.observe({ sink: report.sink }, report.durationMs / 1000);
    if (report.outcome === 'delivered') {
      this.changeToDelivery.observe({ sink: report.sink }, Math.max(0, Date.now() - report.createdAt) / 1000);
    }
  }

  /** observeDocument mirrors the current document into the gauges. */
  observeDocument(doc: EventsDocument): void {
    this.incarnation.set(doc.incarnation);
    this.events.reset();
    // a drill is not listed by IMDS: sebridge_transitions_total{drill="true"} counts it
    for (const e of doc.events) if (!isDrill(e.eventId)) this.events.inc({ type: e.eventType, status: e.eventStatus });
  }
}
