/**
 * The calendar's time zone: an IANA name ("Europe/Oslo", "America/New_York", "UTC"), never an
 * abbreviation or an offset. The platform takes "EST", "CET" or "+01:00" as well, but none of
 * them says when the clocks change where the VMs are ("EST" is Panama's time all year; an offset
 * never follows daylight saving), so a calendar written with one is an hour off half the year.
 * Old names of a zone (Asia/Calcutta, Asia/Kolkata) are the same zone.
 */

/** zoneId: the platform's own name of the zone `name` names (one name for a zone and its old names), or null when it knows none. */
export function zoneId(name: string): string | null {
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: name }).resolvedOptions().timeZone;
  } catch {
    return null;
  }
}

/** An area and a place, each capitalised as IANA writes them: "Europe/Oslo", "America/Argentina/Buenos_Aires", "Etc/GMT+1". */
const IANA_FORM = /^[A-Z][a-z]+(\/[A-Z][A-Za-z0-9_+-]*)+$/;
const EXAMPLES = 'Europe/Oslo, America/New_York, Asia/Kolkata, or UTC';

/** zoneProblem: why `name` is not an IANA time zone name the platform knows, with a name to write instead; null when it is one. */
export function zoneProblem(name: string): string | null {
  if (name === 'UTC' || name === 'Etc/UTC') return null;
  const said = JSON.stringify(name.length > 64 ? `${name.slice(0, 64)}…` : name);
  if (/^[+-]|^(UTC|GMT)[+-]/i.test(name))
    return `${said} is an offset, which never follows daylight saving: write the IANA name of the place, as ${EXAMPLES}`;
  const id = zoneId(name);
  if (id === null) return `${said} is not a time zone this platform knows: write an IANA name, as ${EXAMPLES}`;
  if (IANA_FORM.test(name) && (name === id || name.toLowerCase() !== id.toLowerCase())) return null;
  if (id === 'UTC') return `${said} is another name of UTC: write "UTC"`;
  if (name.toLowerCase() === id.toLowerCase()) return `${said} is not written as IANA writes it: write "${id}"`;
  if (/^[A-Z0-9+-]+$/.test(name))
    return `${said} is an abbreviation, which does not say where or when the clocks change: write the IANA name of the place, as ${EXAMPLES}`;
  return `${said} is an old name of a time zone: write "${id}"`;
}
