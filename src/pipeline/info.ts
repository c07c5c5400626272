/** What a derived CloudEvent carries beside the event (fleet.collision), apart from the mapping so either can grow. */
/** CollisionInfo: the members of a fleet group whose maintenance windows overlap, past what the group allows. */
export interface CollisionInfo {
  /** The wave's id: the same on every member and in every update of one wave of overlapping windows. */
  readonly id: string;
  readonly group: string;
  readonly maxUnavailable: number;
  readonly members: number;
  readonly from: string;
  readonly to: string;
  readonly due: readonly { readonly vm: string; readonly eventId: string; readonly eventType: string; readonly notBefore: string }[];
  /** How many members Azure takes down at once at the busiest moment if nothing changes. */
  readonly atOnce: number;
  /** Members not healthy now, outside the wave (fleet.health): the group has that many slots less for it. */
  readonly unhealthy?: readonly string[];
  /** What this word says: the collision foreseen, the members due changed (at most once a minute), or the wave within the budget now. */
  readonly state?: 'foreseen' | 'updated' | 'resolved';
}

/** PauseInfo: a fleet group paused (by a person, or by its circuit breaker: the members named), or resumed. */
export interface PauseInfo {
  readonly group: string;
  readonly state: 'paused' | 'resumed';
  readonly by: 'person' | 'breaker';
  readonly who: string;
  readonly why: string;
  readonly since: string;
  /** When it ends by itself (null: when a person resumes it). */
  readonly until: string | null;
  /** For the breaker: the members approved early that were not back within their bound. */
  readonly members?: readonly string[];
}

/** UnwatchedInfo: an event Azure's feed lists for a VM no bridge watches (the relay's `unwatched`). */
export interface UnwatchedInfo {
  /** no-member: no bridge ever wrote a record for the VM; stale-member: its bridge stopped; not-listed: its bridge does not list the event. */
  readonly why: 'no-member' | 'stale-member' | 'not-listed';
  /** The VM's group, when it has a member record. */
  readonly group: string | null;
  /** Its member's last heartbeat, when it has a record. */
  readonly heartbeatAt: string | null;
  /** Where Azure's record came from: an Event Grid delivery, or Resource Graph. */
  readonly source: 'eventgrid' | 'resourcegraph' | 'relay';
  /** When the relay first had Azure's record of it. */
  readonly firstSeenAt: string;
}
