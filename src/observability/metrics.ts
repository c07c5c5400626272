/**
 * Metrics: prom-client, prefix `sebridge_`, counters end in `_total`, durations in `_seconds`;
 * Node's default process metrics under their conventional unprefixed names.
 * One registry per bridge (so tests and embedders never share counters), with Node's default
 * process metrics. Gauges that mirror the store (outbox depth, dead letters) are read when
 * scraped, so they are never stale.
 */
import { VERSION } from '../lib/version.ts';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Store } from '../store/store.ts';
import type { EventsDocument } from '../imds/wire.ts';

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

export class Metrics {
  readonly registry = new Registry();
  readonly polls: Counter<'result' | 'code'>;
  readonly imdsDuration: Histogram<'request' | 'outcome'>;
  readonly incarnation: Gauge;
  readonly events: Gauge<'type' | 'status'>;
  readonly transitions: Counter<'transition'>;
  readonly deliveries: Counter<'sink' | 'outcome'>;
  readonly deliveryDuration: Histogram<'sink'>;
  readonly changeToDelivery: Histogram<'sink'>;
  readonly approvals: Counter<'via' | 'result'>;
  readonly consecutiveFailures: Gauge;

  constructor(store?: Store) {
    const r = this.registry;
    // Node's process metrics keep their conventional names (process_*, nodejs_*), which every
    // Prometheus client library uses and standard dashboards expect; only ours carry sebridge_
    collectDefaultMetrics({ register: r });
    new Gauge({ name: 'sebridge_build_info', help: 'Build information (always 1).', labelNames: ['version', 'node'], registers: [r] }).set(
      { version: VERSION, node: process.version },
      1,
    );
    this.polls = new Counter({ name: 'sebridge_polls_total', help: 'Scheduled Events reads by result (changed, unchanged, error) and error code.', labelNames: ['result', 'code'], registers: [r] });
    this.imdsDuration = new Histogram({
      name: 'sebridge_imds_request_duration_seconds',
      help: 'IMDS request duration by request (scheduledevents, start, compute) and outcome (HTTP status or error code).',
      labelNames: ['request', 'outcome'],
      buckets: LATENCY_BUCKETS,
      registers: [r],
    });
    this.incarnation = new Gauge({ name: 'sebridge_document_incarnation', help: 'DocumentIncarnation of the last document read.', registers: [r] });
    this.events = new Gauge({ name: 'sebridge_events', help: 'Events IMDS currently lists, by type and status.', labelNames: ['type', 'status'], registers: [r] });
    this.transitions = new Counter({ name: 'sebridge_transitions_total', help: 'Transitions observed, by kind (scheduled, updated, started, completed, canceled, approved).', labelNames: ['transition'], registers: [r] });
    this.deliveries = new Counter({ name: 'sebridge_deliveries_total', help: 'Delivery attempts by sink and outcome (delivered, retry, dead-letter).', labelNames: ['sink', 'outcome'], registers: [r] });
    this.deliveryDuration = new Histogram({ name: 'sebridge_delivery_duration_seconds', help: 'Duration of one delivery attempt, by sink.', labelNames: ['sink'], buckets: LATENCY_BUCKETS, registers: [r] });
    this.changeToDelivery = new Histogram({
      name: 'sebridge_change_to_delivery_seconds',
      help: 'Time from an IMDS change being observed (committed) to its delivery, by sink.',
      labelNames: ['sink'],
      buckets: LATENCY_BUCKETS,
      registers: [r],
    });
    this.approvals = new Counter({ name: 'sebridge_approvals_total', help: 'Approval attempts by path (policy, hooks, api, link, slack) and result.', labelNames: ['via', 'result'], registers: [r] });
    this.consecutiveFailures = new Gauge({ name: 'sebridge_imds_consecutive_failures', help: 'IMDS reads failed in a row (0 when the last read succeeded).', registers: [r] });
    if (store !== undefined) {
      new Gauge({
        name: 'sebridge_outbox_depth',
        help: 'Events waiting for delivery, by sink.',
        labelNames: ['sink'],
        registers: [r],
        collect() {
          this.reset();
          try {
            for (const [sink, n] of store.outboxDepth()) this.set({ sink }, n);
          } catch {
            /* the store is closed: nothing to report */
          }
        },
      });
      new Gauge({
        name: 'sebridge_dead_letters',
        help: 'Dead letters kept, by sink.',
        labelNames: ['sink'],
        registers: [r],
        collect() {
          this.reset();
          try {
            const counts = new Map<string, number>();
            for (const d of store.deadLetters()) counts.set(d.sink, (counts.get(d.sink) ?? 0) + 1);
            for (const [sink, n] of counts) this.set({ sink }, n);
          } catch {
            /* the store is closed */
          }
        },
      });
    }
  }

  /** observeDocument mirrors the current document into the gauges. */
  observeDocument(doc: EventsDocument): void {
    this.incarnation.set(doc.incarnation);
    this.events.reset();
    for (const e of doc.events) this.events.inc({ type: e.eventType, status: e.eventStatus });
  }
}
