/**
 * An approval from the console, by a person whose key (or proxy role) may approve: through the
 * same paths and checks as the API. A watched event goes to its member's bridge as a signed
 * command (via `console`, by the person's name), where its budget, calendar and single approval
 * decide; past them only when forced, with a reason, on the record. An event no bridge watches
 * goes through Resource Manager (`via: arm`), through the relay's budget for its group. Only an
 * event the fleet lists as pending now is approved: the form's text names it, never builds a
 * request of its own.
 */
import { HttpError } from '../approval/requests.ts';
import { parseVmResourceId } from '../azure/resource-id.ts';
import { commandId, forceReasonOk, sessionFor } from '../fleet/keys.ts';
import { fleetEvents, lower, type FleetEvent } from '../fleet/view/events.ts';
import type { FleetReader } from '../fleet/view/snapshot.ts';
import type { ArmApprovals } from './arm-approval.ts';
import { statusOf, type RelayCommands } from './commands.ts';
import type { RelayConfig } from './config.ts';
import type { Person } from './console-session.ts';

/** What the page says of an approval: its HTTP status, a heading and the words. */
export interface Said {
  readonly status: number;
  readonly heading: string;
  readonly message: string;
}

export interface ApproveDeps {
  readonly config: RelayConfig;
  readonly reader: FleetReader;
  readonly commands: RelayCommands;
  readonly arm: ArmApprovals | null;
}

const MAX_REASON = 2000;
/** The page's script names each click (`click`): a click is one command, a second click another. */
const CLICK = /^[A-Za-z0-9-]{8,64}$/;

/** pendingEvent: the pending event of `vm` with `eventId`, as the fleet lists it now (404 when none). */
export async function pendingEvent(d: Pick<ApproveDeps, 'config' | 'reader'>, vm: string, eventId: string): Promise<FleetEvent> {
  const s = await d.reader.read();
  if (s.unread.length > 0) throw new HttpError(503, 'FLEET_STORE_UNAVAILABLE', `the fleet store could not be read: ${s.unread[0]!.why}`);
  const all = fleetEvents(s, { afterSeconds: d.config.azure?.unwatchedAfterSeconds }, Date.now()).filter(
    (x) => x.eventId === eventId && lower(x.vm) === lower(vm),
  );
  const e = all[0];
  if (e === undefined) throw new HttpError(404, 'UNKNOWN_EVENT', `${vm} has no pending event ${eventId}`);
  // every member may write every record: two entries of one name and EventId (one of them forged) name no one VM
  if (all.length > 1)
    throw new HttpError(
      409,
      'VM_AMBIGUOUS',
      `${all.length} records list ${vm}'s event ${eventId}: approve it through the API, by resource id`,
    );
  return e;
}

/** named: the resource id a record gives is the VM it names (a record may carry any VM's id under any name). */
function named(e: FleetEvent): boolean {
  if (e.resourceId === null) return true;
  const id = parseVmResourceId(e.resourceId);
  if (id === null) return false;
  return lower(id.scaleSet === null ? id.name : `${id.scaleSet}_${id.name}`) === lower(e.vm);
}

/** approveFrom: the console's approval of the form's event by `person`, said in words. */
export async function approveFrom(d: ApproveDeps, person: Person, form: URLSearchParams, client: string): Promise<Said> {
  if (person.role !== 'approve') throw new HttpError(403, 'READ_ONLY', `${person.name} may read the console, not approve`);
  const [vm, eventId, reason] = [form.get('vm') ?? '', form.get('eventId') ?? '', (form.get('reason') ?? '').trim()];
  const force = form.get('force') === 'on';
  // a reason says something: a letter or a digit, not only spaces or invisible characters
  if (force && !forceReasonOk(reason))
    throw new HttpError(400, 'MALFORMED', 'a forced approval needs a reason: it goes past the fleet budget or a blackout, on the record');
  if (reason.length > MAX_REASON) throw new HttpError(400, 'MALFORMED', `the reason is limited to ${MAX_REASON} characters`);
  const e = await pendingEvent(d, vm, eventId);
  if (!/^scheduled$/i.test(e.status)) throw new HttpError(409, 'NOT_APPROVABLE', `${e.vm}'s ${e.eventType} has started already`);
  if (e.unwatched !== undefined) return viaArm(d, person, e, reason, force, client);
  if (!named(e))
    throw new HttpError(
      409,
      'VM_AMBIGUOUS',
      `${e.vm}'s record gives the resource id of another VM (${e.resourceId}): not approved from the console`,
    );
  const target = e.resourceId ?? e.vm;
  // one click is one command, whatever sends it twice (the VM applies it once); without the page's script, a form sent
  // again within the same minute is the same command
  const click = form.get('click');
  const id = commandId(sessionFor(target), {
    webhookId: `console\n${person.name}\n${e.eventId}\n${force}\n${click !== null && CLICK.test(click) ? click : Math.floor(Date.now() / 60_000)}`,
  });
  const command = d.commands.command({ vm: target, id, eventId: e.eventId, by: person.name, via: 'console', reason, force });
  const o = await d.commands.send(command, d.config.replyWaitMs);
  if (o === null)
    return { status: 202, heading: 'Sent to the VM', message: `The approval is on its way to ${e.vm}; it has not answered yet.` };
  if (statusOf(o) === 200)
    return o.outcome === 'approved'
      ? {
          status: 200,
          heading: 'Approved',
          message: `${e.vm}'s ${e.eventType} may start now: Azure has been told.${force ? ' Forced, with your reason on the record.' : ''}`,
        }
      : {
          status: 200,
          heading: 'Already approved',
          message: `It had already been approved by ${o.by ?? 'someone'} (${o.via ?? 'unknown'}).`,
        };
  const held = o.code === 'HELD' || o.code === 'BLACKOUT' || o.code === 'FLEET_STORE_UNAVAILABLE';
  return { status: statusOf(o), heading: held ? 'Held, not approved' : 'Not approved', message: o.message };
}

/** viaArm: an event no bridge watches, approved through Resource Manager (the relay's own path for it). */
async function viaArm(d: ApproveDeps, person: Person, e: FleetEvent, reason: string, force: boolean, client: string): Promise<Said> {
  if (d.arm === null)
    throw new HttpError(
      409,
      'NOT_APPROVABLE',
      `no bridge watches ${e.vm}'s event, and this relay approves through Resource Manager only with azure configured`,
    );
  try {
    const r = await d.arm.approve({ vm: e.resourceId ?? e.vm, eventId: e.eventId, approver: person.name, reason, force, client });
    return { status: 200, heading: 'Approved through Resource Manager', message: `${e.vm}'s ${e.eventType} was approved (${r.status}).` };
  } catch (err) {
    // held by the group's budget or calendar as the relay counts it, or refused: said on the page
    if (err instanceof HttpError && err.status === 409)
      return { status: 409, heading: err.code === 'HELD' ? 'Held, not approved' : 'Not approved', message: err.message };
    throw err;
  }
}
