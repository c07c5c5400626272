/**
 * A drill's EventId: `drill-` and a UUID, which no IMDS EventId (a GUID) can be, so a drill and
 * its CloudEvents can never be taken for a real event. Everything below the drills themselves
 * (the pipeline, the store, approvals, metrics) tells them apart by this alone.
 */
export const DRILL_PREFIX = 'drill-';

/** isDrill: an EventId of a drill. */
export const isDrill = (eventId: string): boolean => eventId.startsWith(DRILL_PREFIX);
