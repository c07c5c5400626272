/**
 * Fleet approvals: the keys and the approval command that travel between the relay and the
 * bridges over Service Bus.
 *
 * - The relay signs every command with an Ed25519 private key; a bridge holds only the public
 *   key, so a compromised VM can verify commands but never make one.
 * - Approval links and Slack buttons carry tokens signed with a per-VM link key, derived from
 *   one fleet key by HKDF-SHA256 over the VM's session id (its resource id, lower-cased). A VM
 *   holds only its own derived key: it cannot mint a token another VM's session would accept,
 *   and the relay, which holds the fleet key, derives the key of whichever VM a token names.
 * - A command is bound to one VM (its session id), one EventId and an expiry; its id (the
 *   Service Bus messageId) is derived from the webhook-id or the token's nonce, so the same
 *   request sent twice, by two relay replicas or by a retrying client, is one message.
 */
import {
  createHash,
  createHmac,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  hkdfSync,
  randomBytes,
  sign,
  timingSafeEqual,
  verify,
  type KeyObject,
} from 'node:crypto';
import { z } from 'zod';

/** The default names of the two queues of fleet approvals: commands to the VMs, outcomes back. */
export const INBOX_QUEUE = 'se-bridge-approvals';
export const REPLIES_QUEUE = 'se-bridge-approval-replies';

/** The two queues the relay and its bridges share, the same keys and defaults on both sides: `queue` carries commands, `replies` their outcomes. */
export const sharedQueues = (side: 'relay' | 'inbox') => ({
  queue: z
    .string()
    .min(1)
    .default(INBOX_QUEUE)
    .describe(
      `The queue (sessions, duplicate detection) the relay sends approval commands to${side === 'relay' ? ': the relay Sends' : ': this VM Listens on its own session'}.`,
    ),
  replies: z
    .string()
    .min(1)
    .default(REPLIES_QUEUE)
    .describe(
      `The queue (sessions) outcomes are published to${side === 'relay' ? ': the relay Listens on its own session' : ': this VM Sends'}.`,
    ),
});

const LINK_KEY_INFO = 'se-bridge link key v1\n';

/** Service Bus session ids are at most 128 characters; a VM's resource id can be longer. */
const MAX_SESSION_ID = 128;

/**
 * sessionFor: the inbox session of a VM named by its resource id (or its name): the id
 * lower-cased, or, when that is longer than a session id may be, `sha256-` and its hex digest.
 * The relay applies it to the `vm` of an API call, so callers name VMs by resource id.
 */
export function sessionFor(vm: string): string {
  const id = vm.toLowerCase();
  return id.length <= MAX_SESSION_ID ? id : `sha256-${createHash('sha256').update(id).digest('hex')}`;
}

/** sessionIdOf: the inbox session of a VM: its resource id, or its name without one. */
export function sessionIdOf(vm: { resourceId: string | null; name: string }): string {
  return sessionFor(vm.resourceId ?? vm.name);
}

/** linkKeyFor derives a VM's link key (32 bytes) from the fleet key. */
export function linkKeyFor(fleetKey: Buffer, sessionId: string): Buffer {
  return Buffer.from(
    hkdfSync('sha256', fleetKey, Buffer.from('se-bridge fleet'), Buffer.from(LINK_KEY_INFO + sessionId.toLowerCase()), 32),
  );
}

/** A base64 key of at least 32 bytes (the fleet key, a VM's link key). */
export const keyBytes = z
  .string()
  .refine(
    (s) => /^[A-Za-z0-9+/_-]+={0,2}$/.test(s.trim()) && Buffer.from(s.trim(), 'base64').length >= 32,
    'must be base64 of at least 32 bytes',
  )
  .transform((s) => s.trim());

export function decodeKey(s: string): Buffer {
  return Buffer.from(s, 'base64');
}

function pem(kind: 'PUBLIC' | 'PRIVATE', value: string): string {
  const v = value.trim();
  return v.startsWith('-----') ? v : `-----BEGIN ${kind} KEY-----\n${v.replace(/\s+/g, '')}\n-----END ${kind} KEY-----\n`;
}

function tryKey(make: () => KeyObject): KeyObject | null {
  try {
    const k = make();
    return k.asymmetricKeyType === 'ed25519' ? k : null;
  } catch {
    return null;
  }
}

/** publicKeyOf reads an Ed25519 public key: PEM, or the base64 of its SPKI DER. */
export function publicKeyOf(value: string): KeyObject | null {
  return tryKey(() => createPublicKey(pem('PUBLIC', value)));
}

/** privateKeyOf reads an Ed25519 private key: PEM, or the base64 of its PKCS#8 DER. */
export function privateKeyOf(value: string): KeyObject | null {
  return tryKey(() => createPrivateKey(pem('PRIVATE', value)));
}

export const ed25519Public = z
  .string()
  .refine((s) => publicKeyOf(s) !== null, 'must be an Ed25519 public key (PEM, or base64 of its SPKI DER)');
export const ed25519Private = z
  .string()
  .refine((s) => privateKeyOf(s) !== null, 'must be an Ed25519 private key (PEM, or base64 of its PKCS#8 DER)');

export interface FleetKeys {
  /** Ed25519 private key, base64 PKCS#8 DER: the relay's `signingKey`. */
  readonly signingKey: string;
  /** Ed25519 public key, base64 SPKI DER: every bridge's `approval.inbox.relayPublicKey`. */
  readonly publicKey: string;
  /** 32 random bytes, base64: the relay's `fleetKey`. */
  readonly fleetKey: string;
}

export function newFleetKeys(): FleetKeys {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return {
    signingKey: privateKey.export({ type: 'pkcs8', format: 'der' }).toString('base64'),
    publicKey: publicKey.export({ type: 'spki', format: 'der' }).toString('base64'),
    fleetKey: randomBytes(32).toString('base64'),
  };
}

// ----- the approval command ------------------------------------------------------------------

export const COMMAND_SUBJECT = 'se-bridge.approve.v1';
/** The application property holding the command's Ed25519 signature (base64url) over the body bytes. */
export const SIGNATURE_PROPERTY = 'se-bridge-signature';

export interface ApprovalCommand {
  readonly v: 1;
  /** The command's id: the Service Bus messageId. */
  readonly id: string;
  /** The session id of the VM it is for. */
  readonly vm: string;
  readonly eventId: string;
  readonly by: string;
  /** api | link | slack | console */
  readonly via: 'api' | 'link' | 'slack' | 'console';
  readonly reason: string;
  /** Past the VM's fleet budget or a blackout, with a reason: only from the console, by a person whose key may approve. */
  readonly force?: true;
  /** The link token's nonce, spent by the bridge that applies it; null for the API. */
  readonly nonce: string | null;
  /** Issued and expires, epoch seconds. */
  readonly iat: number;
  readonly exp: number;
}

/** forceReasonOk: a forced approval's reason says something: a letter or a digit, not only spaces or invisible characters. */
export const forceReasonOk = (reason: string): boolean => /[\p{L}\p{N}]/u.test(reason);

/** commandId derives the messageId: the same request always gives the same id. */
export function commandId(vm: string, source: { webhookId: string } | { nonce: string }): string {
  const what = 'webhookId' in source ? `api\n${source.webhookId}` : `token\n${source.nonce}`;
  return createHash('sha256').update(`${vm.toLowerCase()}\n${what}`).digest('hex').slice(0, 32);
}

export function signCommand(key: KeyObject, command: ApprovalCommand): { body: Buffer; signature: string } {
  const body = Buffer.from(JSON.stringify(command));
  return { body, signature: sign(null, body, key).toString('base64url') };
}

export type CommandCheck =
  | { ok: true; command: ApprovalCommand }
  | { ok: false; code: 'BAD_SIGNATURE' | 'MALFORMED' | 'OTHER_VM' | 'EXPIRED'; message: string; command?: ApprovalCommand };

const CommandShape = z.strictObject({
  v: z.literal(1),
  id: z.string().regex(/^[0-9a-f]{32}$/),
  vm: z.string().min(1).max(1024),
  eventId: z.string().regex(/^[A-Za-z0-9-]{1,100}$/),
  by: z.string().min(1).max(200),
  via: z.enum(['api', 'link', 'slack', 'console']),
  reason: z.string().max(2000),
  force: z.literal(true).optional(),
  nonce: z.string().max(64).nullable(),
  iat: z.number().int(),
  exp: z.number().int(),
});

/**
 * checkCommand verifies a command: the signature over the exact body bytes first (nothing of
 * an unsigned body is trusted), then its shape, its VM and its expiry.
 */
export function checkCommand(
  key: KeyObject,
  body: unknown,
  signature: unknown,
  ownSession: string,
  nowS: number = Math.floor(Date.now() / 1000),
): CommandCheck {
  const bytes = Buffer.isBuffer(body)
    ? body
    : body instanceof Uint8Array
      ? Buffer.from(body)
      : typeof body === 'string'
        ? Buffer.from(body)
        : null;
  if (bytes === null || typeof signature !== 'string' || !/^[A-Za-z0-9_-]{86}$/.test(signature)) {
    return { ok: false, code: 'BAD_SIGNATURE', message: 'the command is not signed' };
  }
  if (!verify(null, bytes, key, Buffer.from(signature, 'base64url')))
    return { ok: false, code: 'BAD_SIGNATURE', message: "the command's signature does not verify with the relay's public key" };
  let parsed: z.infer<typeof CommandShape>;
  try {
    parsed = CommandShape.parse(JSON.parse(bytes.toString('utf8')));
  } catch {
    return { ok: false, code: 'MALFORMED', message: 'the command is not a well-formed approval command' };
  }
  const command = parsed as ApprovalCommand;
  if (command.vm.toLowerCase() !== ownSession.toLowerCase())
    return { ok: false, code: 'OTHER_VM', message: `the command is for ${command.vm}, not for this VM`, command };
  if (nowS >= command.exp)
    return { ok: false, code: 'EXPIRED', message: `the command expired at ${new Date(command.exp * 1000).toISOString()}`, command };
  return { ok: true, command };
}

/** What a bridge answers to a command, on the replies queue. */
export interface CommandOutcome {
  readonly v: 1;
  readonly commandId: string;
  readonly vm: string;
  readonly eventId: string | null;
  readonly outcome: 'approved' | 'already-approved' | 'not-approvable' | 'failed' | 'rejected';
  readonly code: string | null;
  readonly message: string;
  readonly by: string | null;
  readonly via: string | null;
  readonly at: string;
}

export const OUTCOME_SUBJECT = 'se-bridge.approval-outcome.v1';

/**
 * Outcomes are signed with the VM's link key (HMAC-SHA256 over the body): a VM may send on the
 * replies queue, so the relay believes an outcome only from the VM it names.
 */
export function signOutcome(linkKey: Buffer, body: Buffer): string {
  return createHmac('sha256', linkKey).update('se-bridge outcome v1\n').update(body).digest('base64url');
}

export function outcomeVerifies(linkKey: Buffer, body: Buffer, signature: unknown): boolean {
  if (typeof signature !== 'string') return false;
  const expected = Buffer.from(signOutcome(linkKey, body));
  const offered = Buffer.from(signature);
  return expected.length === offered.length && timingSafeEqual(expected, offered);
}
