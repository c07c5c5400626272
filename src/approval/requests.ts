/**
 * What the approval server's routes share: its HTTP errors, bounded and strictly decoded
 * bodies, the JSON body of POST /v1/approvals, and the approval page's answers.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { BridgeError, type Code } from '../lib/errors.ts';
import { readBounded } from '../lib/http-body.ts';

export const MAX_BODY = 64 * 1024;

/** HttpError is a refusal with its HTTP status: a JSON 4xx, or the page's error. */
export class HttpError extends BridgeError {
  readonly status: number;
  /** More fields of the JSON answer, beside `error` (a tracking id). */
  readonly extra: Record<string, unknown>;
  constructor(status: number, code: Code, message: string, extra: Record<string, unknown> = {}) {
    super(code, message);
    this.status = status;
    this.extra = extra;
  }
}

/**
 * parseApprovalBody reads the JSON body of POST /v1/approvals: {eventId, approver?, reason?,
 * force?}, and on the relay also `vm`, the VM's resource id (or its name when it has none), and
 * `via`. The relay forces only what it approves itself (`via: "arm"`): a bridge's budget is its own.
 */
export function parseApprovalBody(body: Buffer): { eventId: string; approver: string; reason: string; force: boolean };
export function parseApprovalBody(
  body: Buffer,
  withVm: true,
): { vm: string; eventId: string; approver: string; reason: string; force: boolean; via?: 'arm' };
export function parseApprovalBody(
  body: Buffer,
  withVm = false,
): { vm?: string; eventId: string; approver: string; reason: string; force?: boolean; via?: 'arm' } {
  let v: unknown;
  try {
    v = JSON.parse(utf8(body));
  } catch {
    throw new HttpError(400, 'MALFORMED', 'the body is not JSON');
  }
  const o = v as Record<string, unknown> | null;
  if (o === null || typeof o !== 'object' || Array.isArray(o)) throw new HttpError(400, 'MALFORMED', 'the body must be a JSON object');
  const fields = withVm ? ['vm', 'eventId', 'approver', 'reason', 'via', 'force'] : ['eventId', 'approver', 'reason', 'force'];
  const bad = Object.keys(o).filter((k) => !fields.includes(k));
  if (bad.length > 0) throw new HttpError(400, 'MALFORMED', `unknown field ${bad[0]}`);
  // eslint-disable-next-line no-control-regex -- control characters are what this refuses
  if (withVm && (typeof o.vm !== 'string' || o.vm.length === 0 || o.vm.length > 1024 || /[\u0000-\u001f]/.test(o.vm))) {
    throw new HttpError(400, 'MALFORMED', "vm must be the VM's resource id (or its name when it has none)");
  }
  if (typeof o.eventId !== 'string' || !/^[A-Za-z0-9-]{1,100}$/.test(o.eventId))
    throw new HttpError(400, 'MALFORMED', 'eventId must be an EventId');
  if (o.approver !== undefined && (typeof o.approver !== 'string' || o.approver.length === 0 || o.approver.length > 200)) {
    throw new HttpError(400, 'MALFORMED', 'approver must be a string of 1 to 200 characters');
  }
  if (o.reason !== undefined && (typeof o.reason !== 'string' || o.reason.length > 2000))
    throw new HttpError(400, 'MALFORMED', 'reason must be a string of at most 2000 characters');
  if (o.via !== undefined && o.via !== 'arm')
    throw new HttpError(400, 'MALFORMED', 'via must be "arm" (through Resource Manager), or left out (through the VM\'s bridge)');
  if (o.force !== undefined && typeof o.force !== 'boolean') throw new HttpError(400, 'MALFORMED', 'force must be true or false');
  if (o.force === true && (typeof o.reason !== 'string' || o.reason.trim() === ''))
    throw new HttpError(400, 'MALFORMED', 'a forced approval needs a reason: it goes past the fleet budget or a blackout, on the record');
  if (withVm && o.force === true && o.via !== 'arm')
    throw new HttpError(
      400,
      'MALFORMED',
      "the relay forces only an approval via arm: through the VM's bridge, force it with se-bridge approve --force on the VM",
    );
  return {
    ...(withVm ? { vm: o.vm as string, ...(o.via === 'arm' ? { via: 'arm' as const } : {}) } : {}),
    force: o.force === true,
    eventId: o.eventId,
    approver: o.approver ?? 'api',
    reason: o.reason ?? '',
  };
}

/** utf8 decodes strictly: a body that is not UTF-8 is malformed. */
export function utf8(body: Buffer): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(body);
  } catch {
    throw new HttpError(400, 'MALFORMED', 'the body is not UTF-8');
  }
}

export async function readBody(req: IncomingMessage, max: number = MAX_BODY): Promise<Buffer> {
  const tooLarge = () => new HttpError(413, 'BODY_TOO_LARGE', `bodies are limited to ${max} bytes`);
  if (Number(req.headers['content-length'] ?? 0) > max) {
    req.resume();
    throw tooLarge();
  }
  const read = await readBounded(req, max, 'resume');
  if (read.overflow) throw tooLarge();
  return read.bytes;
}

export function nonce(): string {
  return randomBytes(12).toString('base64');
}

export function page(res: ServerResponse, status: number, html: string): void {
  const n = /nonce="([^"]+)"/.exec(html)?.[1] ?? '';
  res.writeHead(status, {
    'content-type': 'text/html; charset=utf-8',
    'content-security-policy': `default-src 'none'; style-src 'nonce-${n}'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`,
    'referrer-policy': 'no-referrer',
    'x-frame-options': 'DENY',
    'content-length': Buffer.byteLength(html),
  });
  res.end(html);
}

export function pageHeading(code: string): string {
  switch (code) {
    case 'TOKEN_EXPIRED':
    case 'TOKEN_USED':
      return 'This link can no longer be used';
    case 'NOT_APPROVABLE':
      return 'This event can no longer be approved';
    case 'UNKNOWN_EVENT':
      return 'Unknown event';
    case 'IMDS_REFUSED':
      return 'Azure did not accept the approval';
    case 'HELD':
      return "Held: the group's maintenance budget is used up";
    case 'BLACKOUT':
      return 'Held: a blackout of the maintenance calendar';
    case 'FLEET_STORE_UNAVAILABLE':
      return "Held: the group's budget cannot be checked";
    default:
      return 'This link is not valid';
  }
}
