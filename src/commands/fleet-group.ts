/**
 * se-bridge fleet pause | resume: a person stops every early approval in this VM's group now,
 * and says who and why (until a time, or until resumed), or lets them go on. Written in the
 * group's store, where every member reads it with its slots (fleet/budget/pause.ts).
 */
import { userInfo } from 'node:os';
import type { FleetConfig } from '../fleet/budget/config.ts';
import { pauseText } from '../fleet/budget/pause.ts';
import { pauseGroup, pauseProblem, resumeGroup } from '../fleet/budget/pause-store.ts';
import { openFleetStore } from '../fleet/budget/stores/open.ts';
import { errorFields } from '../lib/errors.ts';
import { visible } from '../present/text-line.ts';
import { CONFIG_OPTIONS, EXIT, loadOrReport, needs, parse, UsageError, type ConfigValues } from './common.ts';

/** pause: `fleet pause --reason TEXT [--until TIME]`, its options parsed (fleet.ts). */
export async function pause(values: ConfigValues & { readonly reason?: string; readonly until?: string }): Promise<number> {
  const request = {
    who: `cli:${userInfo().username}`,
    why: values.reason ?? '',
    ...(values.until === undefined ? {} : { until: values.until }),
  };
  const problem = pauseProblem(request, Date.now());
  if (problem !== null) throw new UsageError(`fleet pause: ${problem} (fleet pause --reason TEXT [--until TIME])`);
  const fleet = await memberFleet(values);
  if (fleet === null) return EXIT.usage;
  const store = await openFleetStore(fleet.store, fleet.group, fleet.storeTimeoutMs);
  try {
    const p = await pauseGroup(store, request, Date.now());
    process.stdout.write(
      `${visible(pauseText(fleet.group, p))}\nNo early approval in the group while it holds; a forced approval, with a reason, goes past it. ` +
        `Each member sees it at its next listing of the slots; se-bridge fleet resume ends it.\n`,
    );
    return EXIT.ok;
  } catch (err) {
    return failed('fleet pause', err);
  } finally {
    await store.close();
  }
}

/** resume: `fleet resume`: the pause removed, the breaker's failures cleared. */
export async function resume(argv: string[]): Promise<number> {
  const { values } = parse(argv, { ...CONFIG_OPTIONS });
  const fleet = await memberFleet(values);
  if (fleet === null) return EXIT.usage;
  const store = await openFleetStore(fleet.store, fleet.group, fleet.storeTimeoutMs);
  try {
    const r = await resumeGroup(store, Date.now());
    const was =
      r.resumed === null
        ? `Group ${fleet.group} was not paused.`
        : `Resumed group ${fleet.group}: ${visible(pauseText(fleet.group, r.resumed))}.`;
    const breaker = r.breakerCleared ? " The circuit breaker's failures were cleared." : '';
    process.stdout.write(
      `${was}${breaker} Held approvals go on in the group's queue order as each member reads its slots again (within a heartbeat).\n`,
    );
    return EXIT.ok;
  } catch (err) {
    return failed('fleet resume', err);
  } finally {
    await store.close();
  }
}

/** memberFleet: this VM's fleet block, or null when it has none or the file is not valid (said on stderr). */
export async function memberFleet(values: Parameters<typeof loadOrReport>[0]): Promise<FleetConfig | null> {
  const loaded = await loadOrReport(values, needs.sections('fleet'));
  if (loaded === null) return null;
  if (loaded.config.fleet === undefined) process.stderr.write(`${loaded.path}: fleet is not configured, so this VM belongs to no group\n`);
  return loaded.config.fleet ?? null;
}

/** failed: a command that could not read or write the store says why on stderr (exit 1). */
export function failed(what: string, err: unknown): number {
  const e = errorFields(err);
  process.stderr.write(`se-bridge ${what}: ${e.code}: ${e.err}\n`);
  return EXIT.failure;
}
