/**
 * se-bridge simulate: the IMDS simulator alone, for pointing any client at it; with
 * `--servicebus HOST:PORT`, also the local Service Bus stand-in (AMQP 1.0) holding the two queues
 * of fleet approvals, so a relay and bridges configured by hand can run against it.
 */
import { ImdsSimulator } from '../simulator/server.ts';
import { SCENARIOS } from '../simulator/scenarios.ts';
import { parseHostPort, type HostPort } from '../lib/validators.ts';
import type { AmqpPeer } from '../simulator/servicebus/amqp-peer.ts';
import { EXIT, onShutdown, parse, UsageError } from './common.ts';
import { INBOX, localServiceBus, REPLIES } from './local-fleet.ts';

const say = (text: string) => process.stdout.write(`${text}\n`);

function hostPortOf(option: string, value: string): HostPort {
  const at = parseHostPort(value);
  if (at === null) throw new UsageError(`--${option} must be HOST:PORT, got "${value}"`);
  return at;
}

export async function main(argv: string[]): Promise<number> {
  const { values } = parse(argv, {
    listen: { type: 'string', default: '127.0.0.1:8080' },
    scenario: { type: 'string' },
    timing: { type: 'string', default: 'dev' },
    'vm-name': { type: 'string', default: 'sim-vm-0' },
    servicebus: { type: 'string' },
  });
  const imdsAt = values.listen === 'off' ? null : hostPortOf('listen', values.listen);
  const busAt = values.servicebus === undefined ? null : hostPortOf('servicebus', values.servicebus);
  if (imdsAt === null && busAt === null) throw new UsageError('--listen off needs --servicebus HOST:PORT: there would be nothing to run');
  if (values.timing !== 'dev' && values.timing !== 'real') throw new UsageError('--timing must be dev or real');
  const names = SCENARIOS.map((s) => s.name);
  if (values.scenario !== undefined && values.scenario !== 'all' && !names.includes(values.scenario)) {
    throw new UsageError(`unknown scenario "${values.scenario}"; known: all, ${names.join(', ')}`);
  }
  if (values.scenario !== undefined && imdsAt === null)
    throw new UsageError('--scenario plays on the IMDS simulator, which --listen off turns off');

  let bus: AmqpPeer | null = null;
  if (busAt !== null) {
    bus = await localServiceBus(30_000, busAt);
    serviceBusBanner(bus);
  }
  let sim: ImdsSimulator | null = null;
  if (imdsAt !== null) {
    const imds = new ImdsSimulator({ timing: values.timing, vmName: values['vm-name'] });
    sim = imds;
    const url = await imds.listen(imdsAt.port, imdsAt.host);
    imdsBanner(imds, url, values.timing, names);
    if (values.scenario === 'all') for (const n of names) imds.playScenario(n);
    else if (values.scenario !== undefined) imds.playScenario(values.scenario);
    imds.onChange((incarnation) => {
      const doc = imds.document();
      say(
        `incarnation ${incarnation}: ${doc.Events.map((e) => `${String(e.EventType)}/${String(e.EventStatus)}`).join(', ') || 'no events'}`,
      );
    });
  }
  await new Promise<void>((resolve) => onShutdown(() => resolve()));
  await sim?.close();
  await bus?.close();
  return EXIT.ok;
}

function imdsBanner(sim: ImdsSimulator, url: string, timing: string, names: readonly string[]): void {
  say(
    `IMDS simulator on ${url} (timing ${timing}, VM ${sim.vmName})\n` +
      `  GET  ${url}/metadata/scheduledevents?api-version=2020-07-01   (header Metadata: true)\n` +
      `  POST ${url}/_sim/scenario {"name": "..."}   scenarios: ${names.join(', ')}\n` +
      `  POST ${url}/_sim/faults {"kind": "status", "status": 500, "count": 3}   GET ${url}/_sim/state\n` +
      `  GET  ${url}/metadata/identity/oauth2/token?api-version=2018-02-01&resource=...   managed identity tokens; for the Azure SDKs: AZURE_POD_IDENTITY_AUTHORITY_HOST=${url}`,
  );
}

function serviceBusBanner(bus: AmqpPeer): void {
  const cs = bus.connectionString();
  say(
    `Service Bus stand-in (AMQP 1.0, no TLS) on ${cs.match(/sb:\/\/([^;]+)/)![1]}: queue ${INBOX} (sessions, duplicate detection, 10 deliveries) and queue ${REPLIES} (sessions)\n` +
      `  connection string: ${cs}\n` +
      `  relay.yaml:   serviceBus: { connectionString: "<the connection string>", queue: ${INBOX}, replies: ${REPLIES} }\n` +
      `  bridge.yaml:  approval: { relayUrl: <the relay's URL>, inbox: { connectionString: "<the connection string>", queue: ${INBOX}, replies: ${REPLIES}, relayPublicKey: ..., linkKey: ... } }\n` +
      `  keys: se-bridge fleet keys; a VM's linkKey: SE_BRIDGE_FLEET_KEY=... se-bridge fleet link-key --vm <its resource id>`,
  );
}
