/** se-bridge simulate: the IMDS simulator alone, for pointing any client at it. */
import { ImdsSimulator } from '../simulator/server.ts';
import { SCENARIOS } from '../simulator/scenarios.ts';
import { parseHostPort } from '../lib/validators.ts';
import { EXIT, onShutdown, parse, UsageError } from './common.ts';

export async function main(argv: string[]): Promise<number> {
  const { values } = parse(argv, {
    listen: { type: 'string', default: '127.0.0.1:8080' },
    scenario: { type: 'string' },
    timing: { type: 'string', default: 'dev' },
    'vm-name': { type: 'string', default: 'sim-vm-0' },
  });
  const at = parseHostPort(values.listen);
  if (at === null) throw new UsageError(`--listen must be HOST:PORT, got "${values.listen}"`);
  if (values.timing !== 'dev' && values.timing !== 'real') throw new UsageError('--timing must be dev or real');
  const names = SCENARIOS.map((s) => s.name);
  if (values.scenario !== undefined && values.scenario !== 'all' && !names.includes(values.scenario)) {
    throw new UsageError(`unknown scenario "${values.scenario}"; known: all, ${names.join(', ')}`);
  }
  const sim = new ImdsSimulator({ timing: values.timing, vmName: values['vm-name'] });
  const url = await sim.listen(at.port, at.host);
  process.stdout.write(
    `IMDS simulator on ${url} (timing ${values.timing}, VM ${sim.vmName})\n` +
      `  GET  ${url}/metadata/scheduledevents?api-version=2020-07-01   (header Metadata: true)\n` +
      `  POST ${url}/_sim/scenario {"name": "..."}   scenarios: ${names.join(', ')}\n` +
      `  POST ${url}/_sim/faults {"kind": "status", "status": 500, "count": 3}   GET ${url}/_sim/state\n` +
      `  GET  ${url}/metadata/identity/oauth2/token?api-version=2018-02-01&resource=...   managed identity tokens; for the Azure SDKs: AZURE_POD_IDENTITY_AUTHORITY_HOST=${url}\n`,
  );
  if (values.scenario === 'all') for (const n of names) sim.playScenario(n);
  else if (values.scenario !== undefined) sim.playScenario(values.scenario);
  sim.onChange((incarnation) => {
    const doc = sim.document();
    process.stdout.write(`incarnation ${incarnation}: ${doc.Events.map((e) => `${String(e.EventType)}/${String(e.EventStatus)}`).join(', ') || 'no events'}\n`);
  });
  await new Promise<void>((resolve) => onShutdown(() => resolve()));
  await sim.close();
  return EXIT.ok;
}
