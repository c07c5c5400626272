/**
 * The usage of every verb and sub-verb: what `se-bridge <verb> --help` prints (exit 0), and what
 * a usage error names. Each text starts `Usage: se-bridge <verb>`.
 */

const CONFIG = `  -c, --config FILE   the configuration (else $SE_BRIDGE_CONFIG, else config/bridge.yaml, else the
                      installed /etc/se-bridge/bridge.yaml)
  --env-file FILE     variables for \${NAME} (else $SE_BRIDGE_ENV_FILE, else the installed service's
                      /etc/se-bridge/se-bridge.env when it exists); your own environment wins`;

const RELAY_CONFIG = `  -c, --config FILE   the relay's configuration (else $SE_BRIDGE_RELAY_CONFIG, else config/relay.yaml)
  --env-file FILE     variables for \${NAME} (else $SE_BRIDGE_ENV_FILE, else the installed service's
                      /etc/se-bridge/se-bridge.env when it exists); your own environment wins`;

export const USAGES: Record<string, string> = {
  run: `Usage: se-bridge run [--config FILE] [--env-file FILE] [--dry-run]

Runs the daemon: polls IMDS, delivers every change to the sinks, serves approvals and metrics.
Exit 2 on a configuration problem, 1 when it cannot start (another daemon holds the state file).

${CONFIG}
  --dry-run           send nothing that changes anything (no sink, no StartRequests); log it instead
`,
  demo: `Usage: se-bridge demo [--duration S] [--state-dir DIR] | se-bridge demo --fleet

Starts the IMDS simulator, a bridge with stdout and file sinks and the approval server on
localhost, plays every scenario and prints each CloudEvent and approval link, then one drill and
its report. Exit 1 when a step fails.

  --duration S        how long to run, in seconds (default 90)
  --state-dir DIR     where the demo's state and event file go (default: a new temporary folder)
  --fleet             the fleet instead (about 30 s): approvals through two relays and a local
                      Service Bus stand-in; then, with the fleet's records in Azurite, a fleet
                      budget, a health gate, a calendar's blackout and the relay's fleet view
`,
  simulate: `Usage: se-bridge simulate [--listen HOST:PORT|off] [--scenario NAME|all] [--timing dev|real] [--vm-name NAME] [--servicebus HOST:PORT]

Runs the IMDS simulator alone (Scheduled Events, instance metadata, the token endpoint), and with
--servicebus the local Service Bus stand-in for trying fleet approvals by hand.

  --listen HOST:PORT     where the IMDS simulator listens (default 127.0.0.1:8080); off: none
  --scenario NAME        a scenario to play at start, or all (default: none)
  --timing dev|real      development timing, in seconds, or Azure's, in minutes (default dev)
  --vm-name NAME         the simulated VM's name (default sim-vm-0)
  --servicebus HOST:PORT also a Service Bus stand-in (AMQP 1.0) with the inbox and replies queues;
                         the banner gives its connection string
`,
  validate: `Usage: se-bridge validate [--config FILE] [--env-file FILE] [--relay]

Checks a configuration file: exit 0 when valid (warnings on stderr), exit 2 listing every problem by path.
A relay's file (its serviceBus, signingKey, fleetKey, readKeys or azure keys, and none only a bridge has)
is checked as a relay's.

${CONFIG}
  --relay             a relay's configuration (else $SE_BRIDGE_RELAY_CONFIG, else config/relay.yaml)
`,
  status: `Usage: se-bridge status [--config FILE] [--env-file FILE] [--json]

Reads IMDS once: the events with the time left until NotBefore, their approval and
preparations (read from the daemon's state database), and who this VM is. An approval not given
says what holds it: the calendar (a blackout, or outside the windows, until when), or the fleet
budget (the slots' holders, members not healthy counted as down, the queue). Exit 1 when IMDS
cannot be read.

${CONFIG}
  --json              one JSON document
`,
  calendar: `Usage: se-bridge calendar [--from DATE|TIME] [--days N] [--config FILE] [--env-file FILE] [--json]

What the configured calendar says now (early approval open, inside a window, in a blackout, and
until when), then its stretches of the next N days (default 14): windows, blackouts and the time
outside the windows, each from its start to its end, in the calendar's time zone with the UTC
offset in force (the night the clocks go back shows 02:30 +02:00 and 02:30 +01:00) and in UTC.
Exit 2 without a calendar.

${CONFIG}
  --from DATE|TIME    start there instead of now: a date (YYYY-MM-DD, from its midnight in the
                      calendar's time zone, N whole days) or a time with its offset (2026-10-25T01:30:00Z)
  --days N            how many days ahead, 1 to 400 (default 14)
  --json              one JSON document: each stretch's from and to in UTC, localFrom and localTo
                      in the calendar's time zone (RFC 3339 with the offset)
`,
  approve: `Usage: se-bridge approve EVENTID [--config FILE] [--env-file FILE] [--reason TEXT] [--force] [--json]
       se-bridge approve EVENTID --relay URL --vm ID [--via arm [--force]] [--reason TEXT] [--json]

Approves an event through the running daemon's approval server (the same path as every approval),
or through the fleet's relay (its POST /v1/approvals, signed with $SE_BRIDGE_RELAY_API_SECRET).
An approval the fleet budget holds exits 1, naming who holds the slots.

${CONFIG}
  --reason TEXT       kept with the approval record
  --force             past the fleet budget or a blackout of the calendar, on the record (needs --reason);
                      with --via arm, past the group's budget (or one the relay cannot know) and blackout
  --relay URL         the relay's URL: the approval goes to the VM named by --vm, through its bridge
  --vm ID             with --relay: the VM's resource id (or its name)
  --via arm           with --relay: through Azure Resource Manager with the relay's identity (a VM with
                      no bridge, or one that cannot be reached), past its group's budget first; only
                      an event Azure's feed lists, when the relay reads it
  --json              the answer as JSON
`,
  'dead-letters': `Usage: se-bridge dead-letters list|replay [--sink NAME] [--config FILE] [--env-file FILE] [--json]

  list                the events a sink could not take, with the last error
  replay              queue them again (also while the daemon runs)
  --sink NAME         only this sink's
${CONFIG}
  --json              list as JSON
`,
  schema: `Usage: se-bridge schema

Prints the configuration's JSON Schema (for editors and CI checks).
`,
  relay: `Usage: se-bridge relay [--config FILE] [--env-file FILE]

Runs the fleet's approval endpoint: signs approvals as commands to each VM's Service Bus session
(serviceBus), serves the fleet view and Azure's feed (fleet, azure), or both.
Exit 2 on a configuration problem, 1 when it cannot start.

${RELAY_CONFIG}
`,
  fleet: `Usage: se-bridge fleet keys | link-key --vm ID | public-key | status [--config FILE | --relay-config FILE] [--env-file FILE] [--json]
       se-bridge fleet forget VM [--force] [--config FILE] [--env-file FILE]
       se-bridge fleet pause --reason TEXT [--until TIME] [--config FILE] [--env-file FILE] | fleet resume [--config FILE] [--env-file FILE]

  keys                a new relay signing key pair and fleet key (JSON)
  link-key --vm ID    a VM's link key, from $SE_BRIDGE_FLEET_KEY and the VM's resource id
  public-key          the public key of $SE_BRIDGE_RELAY_SIGNING_KEY
  status              the fleet budget's group (or, with --relay-config, every group and what is unwatched)
  forget VM           removes the record of a member gone for good (a VM scaled in or deleted) from the group
  pause               stops every early approval in the group (a forced one goes past it), until --until or resume
  resume              lets the group's early approvals go on, and clears its circuit breaker's failures
`,
  'fleet pause': `Usage: se-bridge fleet pause --reason TEXT [--until TIME] [--config FILE] [--env-file FILE]

Pauses the fleet budget's group (fleet.group): no early approval in it while the pause holds
(policy, hooks, a person's plain approval: each held, naming the pause's reason, who and since);
a forced approval, with a reason, goes past it, on the record. Written in the group's store with
who (cli:<user>), why, since and until; it replaces a pause in force, the circuit breaker's too.
Each member reads it with its slots (at its next heartbeat at the latest). Exit 2 without a
reason, or with an --until that is not a time in the future; 1 when the store cannot be written.

  --reason TEXT       why (required): said in every held answer, status and fleet status
  --until TIME        when the pause ends by itself (RFC 3339, as 2026-12-01T06:00:00Z); without it, at resume
${CONFIG}
`,
  'fleet resume': `Usage: se-bridge fleet resume [--config FILE] [--env-file FILE]

Ends the pause of the fleet budget's group (a person's or its circuit breaker's) and clears the
breaker's failures. The approvals it held go on in the group's queue order as each member reads
its slots again (within a heartbeat). Exit 1 when the store cannot be written.
${CONFIG}
`,
  'fleet forget': `Usage: se-bridge fleet forget VM [--force] [--config FILE] [--env-file FILE]

Removes the record of a member that no longer exists (a VM scaled in or deleted) from the fleet
budget's store, named by its VM name or its resource id, and says what it removed. The group's
members forget such records by themselves after fleet.forgetAfterSeconds (7 days by default);
this does it now. The record is removed only as it was read: a member that writes it meanwhile
keeps it. Exit 1, removing nothing, when no member or more than one has that name, when its
record is fresh (the member is alive and would write it again), or when it holds a slot (the
slot counts until its recorded end in any case).

  VM                  the member's VM name, or its resource id (any case)
  --force             remove the record even when it is fresh, or the member holds a slot
${CONFIG}
`,
  'fleet status': `Usage: se-bridge fleet status [--config FILE] [--env-file FILE] [--json]
       se-bridge fleet status --relay-config FILE [--env-file FILE] [--json]

Reads the fleet budget's store once: the group's members with their pending events and last
heartbeat (stopped ones marked), who holds the slots and since when, what holds each held
approval (the slots' holders, members not healthy counted as down, the queue), the members not
healthy that count as down and those left out of the count, and a collision foretold (who is due
when, and what the group allows).
With --relay-config, reads the relay's fleet store: every group at once, the events Azure's feed
lists that no bridge watches, and the stale members. Only the store's secrets are resolved.
Exit 1 when the store, or a part of it, cannot be read; 2 when the file has no fleet.

${CONFIG}
  --relay-config FILE the relay's configuration (its fleet.store), instead of a member's
  --json              one JSON document
`,
  'fleet digest': `Usage: se-bridge fleet digest --relay-config FILE [--env-file FILE] [--dry-run] [--json]

Makes the fleet digest (the relay's digest section) from the relay's fleet store now: what is
coming in the next digest.hours, by group (how many, when, held, collisions, unwatched), and posts
it to the digest's sinks (slack, teams) as a new message. The relays then update that message in
place as the fleet changes, until the next period's message.
Exit 1 when a sink could not be posted to or the store could not be read; 2 when the file has no
fleet or no digest.

  --relay-config FILE the relay's configuration (its fleet, digest and sinks)
  --env-file FILE     environment variables to read its secrets from
  --dry-run           print the digest, and post it nowhere (only the store's secrets are resolved)
  --json              one JSON document
`,
  'fleet keys': `Usage: se-bridge fleet keys

Prints a new relay signing key (signingKey), its public key (publicKey: every bridge's
relayPublicKey) and a fleet key (fleetKey), as JSON.
`,
  'fleet link-key': `Usage: se-bridge fleet link-key --vm ID

Prints the link key of one VM (its approval.inbox.linkKey), derived from $SE_BRIDGE_FLEET_KEY
and the VM's resource id (or its name when it has none).
`,
  'fleet public-key': `Usage: se-bridge fleet public-key

Prints the public key of $SE_BRIDGE_RELAY_SIGNING_KEY (base64 SPKI): the bridges' relayPublicKey.
`,
  template: `Usage: se-bridge template test --sink NAME [--config FILE] [--env-file FILE] [--scenario NAME]

  test    renders a webhook sink's template, urlTemplate and headerTemplates for every
          transition of a simulator scenario (degraded-hardware: scheduled, updated, approved,
          started, completed; canceled-maintenance ends canceled) and prints the requests the
          receiver would get. Nothing is sent. Exit 1 when one fails to render.

${CONFIG}
  --sink NAME         the webhook sink whose templates to render
  --scenario NAME     a scenario of \`se-bridge simulate\` (default degraded-hardware)
`,
  'template test': `Usage: se-bridge template test --sink NAME [--config FILE] [--env-file FILE] [--scenario NAME]

Renders a webhook sink's template, urlTemplate and headerTemplates for every transition of a
simulator scenario (degraded-hardware: scheduled, updated, approved, started, completed;
canceled-maintenance ends canceled) and prints the requests the receiver would get. Nothing is
sent. Exit 1 when one fails to render.

${CONFIG}
  --sink NAME         the webhook sink whose templates to render
  --scenario NAME     a scenario of \`se-bridge simulate\` (default degraded-hardware)
`,
  drill: `Usage: se-bridge drill [--type TYPE] [--notice D] [--duration D] [--source Platform|User] [--sink NAME ...]
                      [--prepare rehearse|real] [--cancel|--end] [--config FILE] [--env-file FILE] [--json]

Asks the running daemon (through its local control channel) to play one maintenance for this VM
as if IMDS had listed it: Scheduled, Started when approved or at NotBefore, completed after its
duration. It goes through the same routing, sinks, approvals and preparations as a real event,
every CloudEvent marked drill: true; StartRequests are never posted. Prints the report when it
ends: exit 0 only when every step passed.

  --type TYPE         Reboot, Redeploy, Freeze, Preempt or Terminate (default Reboot)
  --notice D          NotBefore this far ahead (default 60s; 0 with --duration alone)
  --duration D        how long it stays Started (default 30s; 5s with --sink)
  --source S          EventSource: Platform or User (default Platform)
  --sink NAME         only this sink (again for more)
  --prepare MODE      rehearse (preparations say what they would do) or real (default rehearse)
  --cancel            end it canceled at NotBefore instead of starting it
  --end               end the drill being played now
${CONFIG}
  --json              the report as JSON
`,
  prepare: `Usage: se-bridge prepare --dry-run [--sink NAME] [--notice DURATION] [--config FILE] [--env-file FILE] [--json]

Rehearses the preparation of this VM now, changing nothing. A kubernetes sink asks the API server
for each pod on its Node as a dry-run eviction (dryRun=All) and lists the pods a drain would evict
with their grace, the pods it would skip and why (DaemonSet, mirror, terminating), and what would
block it (no controller, an emptyDir volume, a disruption budget); a probe, what it would answer
and for how long, and what it answers now; a hook, what it would run (it runs nothing). Exit 0 when nothing would stop
the preparation, 1 when something would (or the API could not be asked).

  --dry-run           required: nothing is changed
  --sink NAME         only this sink (default: every preparation)
  --notice DURATION   as if NotBefore were this far ahead (30s, 5m): the grace each pod would get
${CONFIG}
  --json              one JSON document
`,
  'dead-letters list': `Usage: se-bridge dead-letters list [--sink NAME] [--config FILE] [--env-file FILE] [--json]

Lists the events a sink could not take, with the last error.
`,
  'dead-letters replay': `Usage: se-bridge dead-letters replay [--sink NAME] [--config FILE] [--env-file FILE]

Queues the dead letters again (also while the daemon runs: it picks them up).
`,
};

/** usageOf: the usage of `verb`, or of `verb sub` when the sub-verb has its own. */
export function usageOf(verb: string, rest: readonly string[]): string | undefined {
  const sub = rest.find((a) => !a.startsWith('-'));
  return (sub !== undefined ? USAGES[`${verb} ${sub}`] : undefined) ?? USAGES[verb];
}

/** wantsHelp: --help or -h anywhere among a verb's arguments. */
export function wantsHelp(rest: readonly string[]): boolean {
  return rest.includes('--help') || rest.includes('-h');
}
