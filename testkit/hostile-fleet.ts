/**
 * What a compromised member can do to the fleet's store (every member may write every record of
 * its container), and the relay run as its operators run it: a process started from its
 * configuration file, its JSON log read line by line. For the tests that hold the relay to acting
 * only on what it checked itself.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './fixtures.ts';
import { openFleetStore } from '../src/fleet/budget/stores/open.ts';
import { asSlot, live, memberKey, memberName, SLOT_PREFIX, type MemberRecord } from '../src/fleet/budget/records.ts';
import type { FleetStoreConfig } from '../src/fleet/budget/stores/config.ts';
import type { AmqpPeer } from '../src/simulator/servicebus/amqp-peer.ts';
import { ImdsSimulator } from '../src/simulator/server.ts';
import { ArmStandIn } from './azure-feed.ts';
import { fleetPeer } from './fleet.ts';
import { FleetStores } from './fleet-stores.ts';

const CLI = join(ROOT, 'src', 'commands', 'cli.ts');

/** A member's record as a hostile (or long gone) member writes it by hand: any text where the bridge would write its own. */
export interface HandWritten {
  readonly name: string;
  /** null: a record that gives none. */
  readonly resourceId: string | null;
  readonly events: readonly { readonly eventId: string; readonly status?: string; readonly notBefore?: string }[];
  readonly maxUnavailable?: number | string;
  /** How long ago it last beat, in seconds (default: now). */
  readonly agoSeconds?: number;
  readonly health?: MemberRecord['health'];
  readonly calendar?: MemberRecord['calendar'];
  readonly zone?: string;
  /** How often it says it beats (default 5). */
  readonly heartbeatSeconds?: number;
  readonly unhealthyCountsForSeconds?: number;
}

/** writeRecord puts a hand-written member record into `group` of the store, under the key its VM's bridge would use. */
export async function writeRecord(store: FleetStoreConfig, group: string, m: HandWritten): Promise<void> {
  const s = await openFleetStore(store, group);
  try {
    const key = memberKey({ name: m.name, resourceId: m.resourceId });
    const at = new Date(Date.now() - (m.agoSeconds ?? 0) * 1000).toISOString();
    const events = m.events.map((e) => ({
      ...{ eventId: e.eventId, eventType: 'Reboot', status: e.status ?? 'Scheduled' },
      ...{ notBefore: e.notBefore ?? new Date(Date.now() + 900_000).toISOString(), durationInSeconds: -1, approved: false },
    }));
    const record = {
      ...{
        member: key,
        vm: m.name,
        resourceId: m.resourceId,
        heartbeatAt: at,
        heartbeatSeconds: m.heartbeatSeconds ?? 5,
        events,
        slot: null,
      },
      ...(m.maxUnavailable === undefined ? {} : { maxUnavailable: m.maxUnavailable }),
      ...(m.health === undefined ? {} : { health: m.health }),
      ...(m.calendar === undefined ? {} : { calendar: m.calendar }),
      ...(m.zone === undefined ? {} : { zone: m.zone }),
      ...(m.unhealthyCountsForSeconds === undefined ? {} : { unhealthyCountsForSeconds: m.unhealthyCountsForSeconds }),
    };
    if ((await s.put(memberName(key), record, null)) === null) throw new Error(`the record of ${m.name} was there already`);
  } finally {
    await s.close();
  }
}

/** liveSlots: the live slots of `group`, as its store holds them (what a relay or a member took, and did not give back). */
export async function liveSlots(store: FleetStoreConfig, group: string) {
  const s = await openFleetStore(store, group);
  try {
    return (await s.list(SLOT_PREFIX)).map((r) => asSlot(r.value)).filter((x) => live(x, Date.now()));
  } finally {
    await s.close();
  }
}

/** RelayProcess: `se-bridge relay --config FILE` as a child process, its URL read from its log. */
export class RelayProcess {
  readonly child: ChildProcess;
  readonly url: string;
  readonly #lines: string[];

  private constructor(child: ChildProcess, url: string, lines: string[]) {
    this.child = child;
    this.url = url;
    this.#lines = lines;
  }

  /** start writes the configuration into `dir` and starts the relay; it resolves once the relay listens (at most 30 s). */
  static async start(dir: string, name: string, config: Record<string, unknown>, env: NodeJS.ProcessEnv): Promise<RelayProcess> {
    const file = join(dir, `${name}.json`);
    writeFileSync(file, JSON.stringify({ ...config, log: { level: 'info' }, observability: { listen: 'off' } }));
    const child = spawn(process.execPath, [CLI, 'relay', '--config', file], {
      cwd: ROOT,
      env: { ...process.env, LOG_LEVEL: '', SE_BRIDGE_RELAY_CONFIG: '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const lines: string[] = [];
    let rest = '';
    let err = '';
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`the relay did not listen within 30 s: ${lines.join('\n')} ${err}`));
      }, 30_000);
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`the relay exited (${code}): ${lines.join('\n')} ${err}`));
      });
      child.stdout.on('data', (c: Buffer) => {
        rest += c.toString();
        const parts = rest.split('\n');
        rest = parts.pop()!;
        for (const line of parts) {
          lines.push(line);
          const at = /"msg":"relay listening"/.test(line) ? (JSON.parse(line) as { url?: string }).url : undefined;
          if (at !== undefined) {
            clearTimeout(timer);
            resolve(at);
          }
        }
      });
    });
    return new RelayProcess(child, url, lines);
  }

  /** logged: the relay's log lines so far, parsed. */
  logged(): Record<string, unknown>[] {
    return this.#lines.flatMap((l) => {
      try {
        return [JSON.parse(l) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
  }

  /** stop ends the relay (SIGTERM, SIGKILL after 10 s) and waits for it. */
  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise((r) => this.child.once('exit', r));
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }
}

/**
 * ArmRelayPeers: what a relay that approves through Resource Manager reaches, for a relay run in
 * the test's own process: the fleet's stores (Azurite), its Service Bus stand-in, a managed
 * identity endpoint (the IMDS simulator, named by AZURE_POD_IDENTITY_AUTHORITY_HOST) and the
 * Resource Manager stand-in over HTTPS.
 */
export class ArmRelayPeers {
  stores!: FleetStores;
  peer!: AmqpPeer;
  identity!: ImdsSimulator;
  arm!: ArmStandIn;

  static async start(tls: { key: string; cert: string }): Promise<ArmRelayPeers> {
    const p = new ArmRelayPeers();
    p.stores = await FleetStores.start();
    p.peer = await fleetPeer();
    p.identity = new ImdsSimulator({ vmName: 'relay-vm', tickMs: 10 });
    process.env.AZURE_POD_IDENTITY_AUTHORITY_HOST = await p.identity.listen();
    p.arm = new ArmStandIn(tls, 50);
    await p.arm.peer.listen();
    return p;
  }

  async stop(): Promise<void> {
    delete process.env.AZURE_POD_IDENTITY_AUTHORITY_HOST;
    await this.arm?.peer.close();
    await this.identity?.close();
    await this.peer?.close();
    await this.stores?.stop();
  }
}
