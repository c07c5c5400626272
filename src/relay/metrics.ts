/**
 * The relay's metrics (/metrics on its observability listener): its requests, the approval
 * commands it sends and the outcomes it receives, its reads of the fleet store, what Azure's feed
 * and its own sinks did, and the fleet digest's messages.
 */
import { Counter, Gauge, Histogram, processMetrics, Registry } from '../lib/prometheus.ts';

export class RelayMetrics {
  readonly registry = new Registry();
  readonly requests: Counter;
  readonly commands: Counter;
  readonly outcomes: Counter;
  readonly replySeconds: Histogram;
  /** Whether this replica holds its replies session: only with Service Bus. */
  readonly repliesConnected: Gauge | null;
  readonly fleetReads: Counter;
  readonly unwatched: Counter;
  readonly azureEvents: Counter;
  readonly sinkOutcomes: Counter;
  readonly digests: Counter;

  constructor(serviceBus = true) {
    const r = this.registry;
    processMetrics(r);
    this.requests = r.register(new Counter('sebridge_relay_requests_total', 'Requests by route and HTTP status.', ['route', 'status']));
    this.commands = r.register(
      new Counter('sebridge_relay_commands_total', 'Approval commands by result (sent, send-failed).', ['result']),
    );
    this.outcomes = r.register(
      new Counter('sebridge_relay_outcomes_total', 'Outcomes received from VMs, by outcome (unverified: dropped).', ['outcome']),
    );
    this.replySeconds = r.register(
      new Histogram(
        'sebridge_relay_reply_seconds',
        'From sending a command to its outcome.',
        [],
        [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      ),
    );
    this.repliesConnected = serviceBus
      ? r.register(new Gauge('sebridge_relay_replies_connected', 'Whether this replica holds its replies session (1) or not (0).'))
      : null;
    this.fleetReads = r.register(
      new Counter('sebridge_relay_fleet_reads_total', 'Reads of the fleet store, by result (ok, failed).', ['result']),
    );
    this.unwatched = r.register(
      new Counter('sebridge_relay_unwatched_total', 'Events no bridge watches, said by this replica, by why.', ['why']),
    );
    this.azureEvents = r.register(
      new Counter('sebridge_relay_azure_events_total', "Azure's reports of scheduled events, by source and result (kept, unchanged).", [
        'source',
        'result',
      ]),
    );
    this.sinkOutcomes = r.register(
      new Counter('sebridge_relay_sink_outcomes_total', "The relay's CloudEvents by sink and result (delivered, failed).", [
        'sink',
        'result',
      ]),
    );
    this.digests = r.register(
      new Counter('sebridge_relay_digests_total', "The fleet digest's messages by sink and result (posted, updated, failed).", [
        'sink',
        'result',
      ]),
    );
  }
}
