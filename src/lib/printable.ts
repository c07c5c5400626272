/**
 * printable makes a peer's response text safe to log: no control characters, bounded length.
 * A sink keeps up to 4 KiB of it; the dispatcher cuts a reason to 300 characters only after
 * scrubbing it, so a secret straddling the cut never leaves a prefix behind.
 */
export function printable(text: string, max = 4096): string {
  // eslint-disable-next-line no-control-regex
  const clean = text.replace(/[\u0000-\u001f\u007f-\u009f\ufffd]+/g, ' ').trim();
  return clean.length > max ? `${clean.slice(0, max)}…` : clean;
}

/**
 * shownUrl: what may be said of a configured URL wherever it is described (a log line, a record
 * others read, an API): its origin and path, never its user and password, query or fragment,
 * which may hold credentials (`https://user:secret@host/health?token=…`).
 */
export function shownUrl(url: string | URL): string {
  const u = typeof url === 'string' ? new URL(url) : url;
  return `${u.origin}${u.pathname}`;
}
