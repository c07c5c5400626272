/**
 * One error base and one catalogue of the stable codes the bridge speaks in: in log lines
 * (`code`), in the approval API's JSON answers (`error.code`), in exit messages. A code never
 * changes meaning; a new failure of the core gets a new code here first, one of a sink in its
 * module's `codes` (the registry merges them into one catalogue). `cause` keeps the error that led
 * to it, so nothing a library said is lost.
 */
export const CODES = {
  // the command line and the configuration
  USAGE: 'the command line is wrong (exit 2)',
  CONFIG_INVALID: 'the configuration file is missing, unreadable or fails validation (exit 2)',
  CONFIG_WARNING: 'the configuration is valid but probably not what was meant (validate prints it too)',
  // reading and writing IMDS
  IMDS_BAD_REQUEST: 'IMDS answered 400: missing Metadata header, bad api-version or body',
  IMDS_NOT_FOUND: 'IMDS answered 404',
  IMDS_METHOD_NOT_ALLOWED: 'IMDS answered 405',
  IMDS_GONE: 'IMDS answered 410: retried for at most the documented 70 s',
  IMDS_RATE_LIMITED: 'IMDS answered 429',
  IMDS_SERVER_ERROR: 'IMDS answered 5xx',
  IMDS_HTTP_STATUS: 'IMDS answered another unexpected status',
  IMDS_NETWORK: 'IMDS could not be reached (refused, reset, DNS)',
  IMDS_TIMEOUT: 'IMDS did not answer in time',
  IMDS_UNPARSABLE: 'IMDS answered something that is not JSON, is truncated or too large',
  IMDS_SCHEMA_INVALID: 'IMDS answered JSON that is not a Scheduled Events document',
  IMDS_ABORTED: 'the request to IMDS was abandoned at shutdown',
  IMDS_DUPLICATE_EVENT_IDS: 'IMDS listed an EventId more than once',
  // turning a document into CloudEvents
  MAPPING_FAILED: 'a good IMDS document could not be turned into CloudEvents (a defect of ours)',
  // the Kubernetes client (src/kube), under the kubernetes sink, the Kubernetes health check and the Lease store
  KUBE_CLIENT_STATUS: 'the Kubernetes API answered outside 2xx (the status and its Status body are kept)',
  KUBE_CLIENT_CONFIG:
    'the kubeconfig, the service account or the exec credential plugin cannot be used (refused before any request; an ExecCredential the client cannot read)',
  KUBE_CLIENT_EXEC: 'the exec credential plugin could not be run, failed, or did not finish within its deadline (its process group killed)',
  KUBE_CLIENT_UNREADABLE: 'the Kubernetes API answered 2xx with something that is not JSON, or not the list asked for',
  KUBE_CLIENT_TOO_LARGE:
    'the Kubernetes API answered more than the client keeps for that kind of call (an object, a page of a list): never decoded',
  MANAGED_IDENTITY_UNAVAILABLE: 'IMDS gave no managed identity token (no such identity on this VM, or IMDS did not answer in time)',
  BLOB_STATUS: 'Azure Blob Storage answered outside 2xx (its status and x-ms-error-code are kept)',
  BLOB_ANSWER_TOO_LARGE:
    'Azure Blob Storage answered more than the client reads (32 MiB): the call fails, no part of the answer is used (a listing is never cut short)',
  // the state database
  STORE_OPEN_FAILED: 'the state database cannot be opened or created',
  STORE_DAMAGED: 'the state database is damaged',
  STORE_SCHEMA_TOO_NEW: 'the state database was written by a newer se-bridge',
  STORE_WRITE_FAILED: 'a write to the state database failed (disk full, read-only, I/O error)',
  STORE_READ_FAILED: 'a read from the state database failed (I/O error)',
  STORE_LOCKED: 'another daemon uses the same state database',
  // delivery
  DELIVERY_RETRY: 'a sink failed transiently; the delivery is tried again',
  DELIVERY_REJECTED: 'a sink refused an event for good; it was dead-lettered',
  DELIVERY_EXHAUSTED: 'an event ran out of attempts or age; it was dead-lettered',
  ATTEMPT_INTERRUPTED: 'the process stopped during a delivery attempt; it counts, so an event that kills the process runs out of attempts',
  SINK_REMOVED: 'outbox rows of a sink no longer configured were dead-lettered',
  SINK_DISABLED: 'a sink was turned off by its configuration',
  SINK_INVALID_OUTCOME: 'a sink returned something that is not an outcome; it counts as a retry (and an attempt)',
  SINK_CREATE_FAILED: 'a sink could not be created at start-up, or its create() did not finish within 30 s (exit 1)',
  SHUTDOWN_DEADLINE: 'deliveries still running at the shutdown deadline were left in the outbox',
  TOKEN_ENDPOINT:
    "managed identity tokens are asked from the configured imds.endpoint (it is not Azure's), as AZURE_POD_IDENTITY_AUTHORITY_HOST would set it",
  SLACK_RESPONSE_URL: 'a Slack response_url could not be updated',
  // approvals
  UNKNOWN_EVENT: 'no such event is known to this VM (404)',
  NOT_APPROVABLE: 'the event is not Scheduled, or no longer listed (409)',
  IMDS_REFUSED: 'IMDS did not accept StartRequests (502)',
  MISSING_SIGNATURE: 'a signed request came without its signature headers (401)',
  BAD_SIGNATURE: 'no signature of a request matches (401)',
  STALE_TIMESTAMP: "a signed request's timestamp is too old or in the future (401)",
  TOKEN_MALFORMED: 'an approval token cannot be read (400)',
  TOKEN_BAD_SIGNATURE: "an approval token's signature does not match (403)",
  TOKEN_EXPIRED: 'an approval token has expired (410)',
  TOKEN_OTHER_VM: 'an approval token was issued for another VM (403)',
  TOKEN_USED: 'an approval token was already used (409)',
  UNSUPPORTED_INTERACTION: 'a Slack interaction that is not an approval button (400)',
  // fleet budgets
  HELD: "a fleet budget holds the approval: the group's slots are all held (409 with the holders; a policy or hook approval is granted by itself once a slot frees)",
  FLEET_STORE_UNAVAILABLE:
    "the fleet budget's store cannot be read or written: no early approval until it answers (503; maintenance starts at NotBefore)",
  FLEET_RECORD_SKIPPED:
    'a record of a fleet store is not one this version reads (another shape, not JSON, too large): named once and left out; a slot record that names a holder counts as held, with no end',
  FLEET_SLOT_TAKEN_OVER: 'a fleet slot was taken over from a holder whose recorded end had passed',
  FLEET_COLLISION: 'more members of a fleet group are due for maintenance at once than it allows (a fleet.collision CloudEvent)',
  FLEET_SLOT_LOST:
    'the slot a member held was found taken by another member (its recorded end had passed), gone, or past its own recorded end; it no longer counts as down',
  FLEET_HEALTH_TIMEOUT:
    'a member was still not healthy timeoutSeconds after its maintenance (fleet.health): its slot was given back all the same',
  FLEET_OVER_BUDGET: "a member is down past its group's budget: forced, or its event Started at NotBefore with no slot free",
  FLEET_MEMBER_IGNORED:
    'a member not healthy (or its record stale) past fleet.unhealthyCountsForSeconds no longer counts against its group: left out, and named (se-bridge fleet forget removes one gone for good)',
  FLEET_MEMBER_FORGOTTEN:
    "a member whose record was not written for fleet.forgetAfterSeconds was forgotten: its record deleted from the group's store, at the version read",
  FLEET_PAUSED:
    "a fleet group is paused (se-bridge fleet pause, the relay, or its circuit breaker): no early approval in it but a forced one, each held naming the pause's reason (a fleet.paused CloudEvent)",
  FLEET_MEMBER_NOT_BACK:
    "a member approved early was not back within its bound (its slot passed its recorded end still in its name): a failure counted by the group's circuit breaker",
  FLEET_BREAKER_OPEN:
    "a fleet group's circuit breaker opened (fleet.breaker: that many members approved early not back within the window): the group paused itself until a person resumes it",
  // calendars
  BLACKOUT:
    'a blackout of the calendar holds the approval (409; only a person forcing it, with a reason, goes past it; maintenance starts at NotBefore)',
  CALENDAR_CONFLICT:
    'a maintenance falls inside a blackout, or outside every window with none before its NotBefore (a calendar.conflict CloudEvent)',
  // drills
  DRILL_REFUSED:
    'a drill was refused: one is being played, a real event is pending for this VM, or its notice is too short for a real preparation (409)',
  DRILL_STARTED: 'a drill started (se-bridge drill): its event is played through every sink; nothing is asked of Azure',
  DRILL_ENDED: 'a drill ended: completed, canceled, by hand, or by a real event for this VM',
  CONTROL_UNAVAILABLE: 'the control channel (drills) could not listen: the daemon runs on, and drills cannot be started',
  CONTROL_IMPOSTOR: "the control channel is not the daemon's (a socket of another user): nothing is sent to it",
  // fleet approvals: the inbox and the relay
  INBOX_SESSION_LOST: 'the approval inbox lost its Service Bus session; it is accepted again with backoff',
  INBOX_ACCEPT_FAILED: 'the approval inbox could not accept its Service Bus session; tried again with backoff',
  INBOX_COMMAND_FAILED: 'a command could not be handled for an unexpected reason; it was abandoned and comes again',
  INBOX_REPLY_FAILED: 'an outcome could not be published on the replies queue (the approval itself stands)',
  OTHER_VM: 'an approval command is for another VM (dead-lettered)',
  EXPIRED: 'an approval command expired before it was applied (dead-lettered)',
  REPLAYED: 'an approval command was applied before: a copy is a replay (dead-lettered)',
  SERVICE_BUS_UNAVAILABLE: 'the relay could not send the approval command; the same request may be sent again (503)',
  RELAY_SEND_FAILED: 'the relay could not send an approval command to Service Bus',
  SEND_TIMEOUT: "Service Bus did not take an approval command within the relay's sendTimeoutMs (then 503)",
  RELAY_REPLIES_LOST: 'the relay lost its replies session; it is accepted again with backoff',
  RELAY_REPLIES_ACCEPT: 'the relay could not accept its replies session; tried again with backoff',
  RELAY_OUTCOME_UNVERIFIED: 'an outcome whose signature does not match the VM it names was dropped',
  RELAY_ERROR: 'the relay failed a request unexpectedly (500)',
  UNKNOWN_TRACKING_ID: 'this relay replica has no record of the tracking id (404)',
  // the fleet view and Azure's feed (the relay)
  UNAUTHORIZED: 'a read key, a console key, an Event Grid key or an Entra ID token is missing or refused (401)',
  BAD_LIMIT: 'limit is not a whole number from 1 to 1000 (400)',
  BAD_CURSOR: 'cursor is not one the fleet read API gave (400)',
  UNKNOWN_PARAMETER: 'a query parameter the route does not take (400)',
  BAD_FILTER: 'a filter value (status, type, group) the fleet read API does not know; the message names those it takes (400)',
  READ_ONLY: "an approval from the console by a person whose key's role (or the proxy's) is read (403; nothing changed)",
  CROSS_SITE: "a POST to the console from another origin than the console's own (403; nothing changed)",
  CONSOLE_SIGN_IN_REFUSED:
    'a sign-in to the console with a key that is none of console.keys (401); the log names the client, never the key',
  UNKNOWN_GROUP: "the calendar feed was asked for a group the fleet's store has no record of, nor the relay's configuration (404)",
  NOT_A_HANDSHAKE: 'an OPTIONS request to the Event Grid endpoint without WebHook-Request-Origin (400)',
  ENTRA_KEYS_UNAVAILABLE:
    "the tenant's signing keys could not be read, so an Entra ID-protected delivery could not be verified (503, which Event Grid delivers again; the keys are asked again at most once a minute)",
  RELAY_DELIVERY_REFUSED: 'an Event Grid delivery or handshake was refused for its key or token; the log says why, never the key or token',
  TOO_MANY_EVENTS:
    'an Event Grid delivery would add more new events than azure.eventGrid.maxNewPerDelivery (413, which Event Grid dead-letters; nothing kept)',
  TOPIC_NOT_ALLOWED: 'an Event Grid delivery or handshake from a topic outside azure.subscriptions (403; nothing kept)',
  RELAY_UNWATCHED: "Azure lists a VM's scheduled event that no bridge watches (an unwatched CloudEvent from the relay)",
  RELAY_SINK_FAILED: "one of the relay's CloudEvents could not be delivered to a sink of its own",
  ARM_UNAVAILABLE:
    "Resource Manager could not be reached, or asked for patience (429, 5xx), for an approval via: arm (503; when no answer came, the group's slot is kept until its recorded end: ask again)",
  ARM_REFUSED: 'Resource Manager refused an approval via: arm (502 with what it said); the slot is given back',
  ARM_FORBIDDEN:
    "Resource Manager refused the relay's identity (401, 403) for an approval via: arm: it needs the Scheduled Events Contributor role on the VM's scope (502); the slot is given back",
  ARM_CONFLICT: 'Resource Manager answered 409 to an approval via: arm (the event is in another state)',
  NOT_A_VM:
    "an approval via: arm names something that is not a VM's or a scale-set instance's resource id, or an EventId that is not a GUID, or a record gives no such id (400; nothing sent)",
  VM_AMBIGUOUS:
    'an approval via: arm names a VM by a name that several resource ids, or several groups, have (409; name it by its resource id)',
  MANY_VMS:
    "an approval via: arm of an event whose Resources lists several VMs: acknowledging it starts every one of them at once, past any one member's slot (409; force with a reason)",
  SUBSCRIPTION_NOT_ALLOWED: 'an approval via: arm for a VM outside azure.subscriptions (403; nothing sent)',
  NOT_LISTED_BY_AZURE:
    "Azure's feed is configured and its records do not list the event as pending for that resource: a member's word alone approves nothing through Resource Manager (404; nothing sent)",
  FLEET_BUDGET_UNKNOWN:
    "an approval via: arm whose group's budget is unknown: the relay's fleet.groups does not state it and no record of the group does, or no record names the VM (409 naming the members; force with a reason goes past it, on the record)",
  FLEET_BUDGET_DISAGREES:
    "an approval via: arm whose group's records state different budgets (409 naming each member's; state the group's in the relay's fleet.groups, or force with a reason)",
  RESOURCE_GRAPH_FAILED: "a Resource Graph query for the fleet's scheduled events failed; it is asked again at the next interval",
  // every HTTP server of the bridge
  BAD_REQUEST: 'the request is malformed (400)',
  MALFORMED: 'the body is not JSON, or not the shape the route takes (400)',
  INTERNAL: 'an HTTP server of the bridge failed unexpectedly (500)',
  NOT_FOUND: 'no such route (404)',
  METHOD_NOT_ALLOWED: 'the route does not take this method (405)',
  UNSUPPORTED_MEDIA_TYPE: 'the body is not of the type the route takes (415)',
  BODY_TOO_LARGE: 'the body is larger than the route accepts (413)',
  HEADERS_TOO_LARGE: 'the request headers are too large (431)',
  REQUEST_TIMEOUT: 'the client was too slow to send its request (408)',
  RATE_LIMITED: 'the client sent too many requests (429)',
  TOO_MANY_CONNECTIONS: 'the client holds as many connections as one client may (429 with Retry-After, then closed)',
  SERVER_BUSY: 'the server holds as many connections as it may (503 with Retry-After, then closed)',
  APPROVAL_SERVER_ERROR: 'the approval server failed unexpectedly (500)',
  // the IMDS simulator's control API
  SIM_BAD_REQUEST: 'the simulator was sent a malformed control request',
  SIM_UNKNOWN_EVENT: 'the simulator has no such event',
  SIM_NO_ROUTE: 'the simulator has no such route',
  SIM_INTERNAL: 'the simulator failed unexpectedly',
} as const;

export type Code = keyof typeof CODES;

export const isCode = (value: unknown): value is Code => typeof value === 'string' && Object.hasOwn(CODES, value);

/** BridgeError is the base of every error the bridge raises on purpose: a stable code, a message, a cause. */
export class BridgeError<C extends string = Code> extends Error {
  readonly code: C;
  constructor(code: C, message: string, options: { cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
  }
}

/** messageOf: an error's message, or what a thrown non-error says of itself. */
export const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** errorFields turns an error into log fields: its stable code and its message (scrubbed on output). */
export function errorFields(err: unknown): { code: string; err: string } {
  const e = err as { code?: unknown; message?: unknown; name?: unknown };
  return {
    code: typeof e?.code === 'string' ? e.code : typeof e?.name === 'string' ? e.name : 'UNKNOWN',
    err: typeof e?.message === 'string' ? e.message : String(err),
  };
}

/** Why there is no Kubernetes connection: said the same by every caller (src/kube). */
export const NOT_CONFIGURED = 'no kubeconfig is configured and this process is not in a cluster (KUBERNETES_SERVICE_HOST is unset)';
