/**
 * se-bridge fleet: the keys of fleet approvals.
 *   fleet keys                 a new relay signing key pair and fleet key (JSON)
 *   fleet link-key --vm ID     a VM's link key, derived from the fleet key ($SE_BRIDGE_FLEET_KEY)
 *   fleet public-key           the public key of $SE_BRIDGE_RELAY_SIGNING_KEY
 *   fleet status [--json]      the fleet budget's group: members, windows, slots
 *   fleet digest --relay-config FILE [--dry-run]   the fleet's chat digest, posted now (or printed)
 *   fleet forget VM [--force]  removes the record of a member gone for good
 *   fleet pause --reason TEXT [--until TIME] | fleet resume   stops the group's early approvals, or lets them go on
 * Keys are read from the environment, never from arguments (which other users may see).
 */
import { createPublicKey } from 'node:crypto';
import { decodeKey, keyBytes, linkKeyFor, newFleetKeys, privateKeyOf, sessionIdOf } from '../fleet/keys.ts';
import { readGroup } from '../fleet/budget/group.ts';
import { groupText } from '../fleet/budget/group-text.ts';
import { forgetMember } from '../fleet/budget/forget.ts';
import { openFleetStore } from '../fleet/budget/stores/open.ts';
import { visible } from '../present/text-line.ts';
import { CONFIG_OPTIONS, EXIT, needs, parse, table, UsageError, type ConfigValues } from './common.ts';
import { loadRelayOrReport } from './relay-file.ts';
import { FleetReader } from '../fleet/view/snapshot.ts';
import { failed, memberFleet, pause, resume } from './fleet-group.ts';
import { RecordSeal } from '../fleet/view/seal.ts';
import { fleetEvents } from '../fleet/view/events.ts';
import { digest } from './fleet-digest.ts';

/** The options of fleet pause (fleet-group.ts). */
const PAUSE_OPTIONS = { ...CONFIG_OPTIONS, reason: { type: 'string' }, until: { type: 'string' } } as const;
/** The options of fleet digest (fleet-digest.ts). */
const DIGEST_OPTIONS = {
  'relay-config': { type: 'string' },
  'env-file': { type: 'string' },
  'dry-run': { type: 'boolean' },
  json: { type: 'boolean' },
} as const;

export async function main(argv: string[]): Promise<number> {
  const [verb, ...rest] = argv;
  if (verb === 'keys') {
    parse(rest, {});
    process.stdout.write(`${JSON.stringify(newFleetKeys(), null, 2)}\n`);
    return EXIT.ok;
  }
  if (verb === 'link-key') {
    const { values } = parse(rest, { vm: { type: 'string' } });
    if (values.vm === undefined || values.vm === '')
      throw new UsageError('fleet link-key needs --vm <resource id, or name when the VM has none>');
    const fleet = keyBytes.safeParse(process.env.SE_BRIDGE_FLEET_KEY ?? '');
    if (!fleet.success) {
      process.stderr.write('se-bridge fleet link-key: SE_BRIDGE_FLEET_KEY must hold the fleet key (base64 of at least 32 bytes)\n');
      return EXIT.usage;
    }
    const session = sessionIdOf({ resourceId: values.vm, name: values.vm });
    process.stdout.write(`${linkKeyFor(decodeKey(fleet.data), session).toString('base64')}\n`);
    return EXIT.ok;
  }
  if (verb === 'public-key') {
    parse(rest, {});
    const key = privateKeyOf(process.env.SE_BRIDGE_RELAY_SIGNING_KEY ?? '');
    if (key === null) {
      process.stderr.write('se-bridge fleet public-key: SE_BRIDGE_RELAY_SIGNING_KEY must hold the relay signing key (Ed25519, PKCS#8)\n');
      return EXIT.usage;
    }
    process.stdout.write(`${createPublicKey(key).export({ type: 'spki', format: 'der' }).toString('base64')}\n`);
    return EXIT.ok;
  }
  if (verb === 'status') {
    const { values } = parse(rest, { ...CONFIG_OPTIONS, json: { type: 'boolean' }, 'relay-config': { type: 'string' } });
    if (values['relay-config'] !== undefined) {
      if (values.config !== undefined)
        throw new UsageError("fleet status reads a member's file (--config) or the relay's (--relay-config), not both");
      return fleetOfRelay({ config: values['relay-config'], 'env-file': values['env-file'] }, values.json === true);
    }
    const fleet = await memberFleet(values);
    if (fleet === null) return EXIT.usage;
    try {
      const g = await readGroup(fleet);
      process.stdout.write(values.json ? `${JSON.stringify(g, null, 2)}\n` : groupText(g, table));
      // what could be read is shown; a part that could not be is a failure all the same
      return g.unread.length === 0 ? EXIT.ok : EXIT.failure;
    } catch (err) {
      return failed('fleet status', err);
    }
  }
  if (verb === 'digest') return digest(parse(rest, DIGEST_OPTIONS).values);
  if (verb === 'forget') return forget(rest);
  if (verb === 'pause') return pause(parse(rest, PAUSE_OPTIONS).values);
  if (verb === 'resume') return resume(rest);
  throw new UsageError('fleet needs keys, link-key --vm ID, public-key, status, digest, forget VM, pause --reason TEXT or resume');
}

/** forget removes the record of a member gone for good (a VM scaled in or deleted) from the group's store. */
async function forget(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, { ...CONFIG_OPTIONS, force: { type: 'boolean' } }, true);
  const [vm, ...more] = positionals;
  if (vm === undefined || vm.trim() === '' || more.length > 0)
    throw new UsageError('fleet forget needs one VM: its name or its resource id');
  const fleet = await memberFleet(values);
  if (fleet === null) return EXIT.usage;
  const store = await openFleetStore(fleet.store, fleet.group, fleet.storeTimeoutMs);
  try {
    const r = await forgetMember(store, fleet.group, vm, values.force === true, Date.now());
    if ('refused' in r) {
      process.stderr.write(`se-bridge fleet forget: ${r.refused}\n`);
      return EXIT.failure;
    }
    const m = r.removed.record;
    const slot =
      r.slot === null
        ? ''
        : ` Its slot ${r.slot.name} stays held until ${visible(r.slot.until ?? 'it is given back')}: the group counts it as down until then.`;
    process.stdout.write(
      `Removed the record of ${visible(m.vm)} (${r.removed.name}) from group ${fleet.group}; it was last written ${visible(m.heartbeatAt)}.${slot}\n`,
    );
    return EXIT.ok;
  } catch (err) {
    return failed('fleet forget', err);
  } finally {
    await store.close();
  }
}

/** fleetOfRelay: every group of the relay's fleet store, and what no bridge watches, read once (only the store's secrets resolved). */
async function fleetOfRelay(values: ConfigValues, json: boolean): Promise<number> {
  // the store's secrets, and the key that opens Azure's records (its own, else the fleet key it is derived from)
  const keyOfRecords = (path: readonly (string | number)[], raw: unknown) => {
    const azure = (raw as { azure?: { recordKey?: unknown } }).azure;
    if (azure === undefined) return false;
    return azure.recordKey === undefined ? needs.sections('fleetKey')(path, raw) : needs.sections('azure.recordKey')(path, raw);
  };
  const loaded = await loadRelayOrReport(values, (path, raw) => needs.sections('fleet')(path, raw) || keyOfRecords(path, raw));
  if (loaded === null) return EXIT.usage;
  const { config, path } = loaded;
  if (config.fleet === undefined) {
    process.stderr.write(`${path}: fleet is not configured, so the relay has no fleet store to read\n`);
    return EXIT.usage;
  }
  const f = config.fleet;
  const seal = config.recordKey === null ? null : new RecordSeal(config.recordKey);
  const reader = new FleetReader({ store: f.store, timeoutMs: f.storeTimeoutMs, cacheMs: 0, budgets: f.groups, seal });
  try {
    await reader.open();
    const s = await reader.read();
    const events = fleetEvents(s, { afterSeconds: config.azure?.unwatchedAfterSeconds }, Date.now());
    const unwatched = events.filter((e) => e.unwatched !== undefined);
    if (json) process.stdout.write(`${JSON.stringify({ store: s.store, groups: s.groups, unwatched, unread: s.unread }, null, 2)}\n`);
    else {
      const parts = s.groups.map((g) => groupText(g, table));
      parts.push(
        unwatched.length === 0
          ? `Unwatched: none${config.azure === undefined ? " (Azure's feed is not configured)" : ''}\n`
          : `Unwatched (Azure lists them, no bridge watches them):\n${table(
              ['VM', 'EVENT ID', 'TYPE', 'STATUS', 'NOT BEFORE', 'WHY', 'APPROVED'],
              // what Azure's records and the members' records say is shown as text, never as terminal control
              unwatched.map((e) =>
                [
                  ...[e.vm, e.eventId, e.eventType, e.status, e.notBefore ?? '-', e.unwatched!.why],
                  e.azure?.acknowledged === undefined ? '-' : `by ${e.azure.acknowledged.by} through Resource Manager`,
                ].map(visible),
              ),
            )}\n`,
      );
      for (const u of s.unread) parts.push(`Could not read ${u.what}: ${visible(u.why)}.\n`);
      process.stdout.write(parts.join('\n'));
    }
    return s.unread.length === 0 ? EXIT.ok : EXIT.failure;
  } catch (err) {
    return failed('fleet status', err);
  } finally {
    await reader.close();
  }
}
