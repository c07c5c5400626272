/** What a rendered request may hold: a header value fit for HTTP, a URL confined to the sink's own. */

/**
 * headerValueProblem: what makes a rendered value unfit for an HTTP field (RFC 9110 section 5.5:
 * visible ASCII, Latin-1 obs-text, spaces and tabs inside), or null.
 */
export function headerValueProblem(text: string): string | null {
  if (/[\r\n\0]/.test(text)) return 'a header value cannot hold a line break or NUL';
  const bad = /[^\t\x20-\x7e\x80-\xff]/.exec(text);
  if (bad !== null) {
    const cp = bad[0].codePointAt(0)!;
    return `a header value holds U+${cp.toString(16).toUpperCase().padStart(4, '0')}, which HTTP does not allow (RFC 9110 field-value: visible ASCII, Latin-1, spaces and tabs); encode it, e.g. with $encodeUrlComponent`;
  }
  return null;
}

/**
 * renderedUrl checks a rendered URL: it must stay on the origin of `url` (where the sink's credentials
 * and client go) and under its directory (its path up to the last `/`, as a relative URL
 * resolves), so that an EventId like `../../admin/x` cannot reach another endpoint of the host.
 */
export function renderedUrl(made: unknown, base: string): { url: string } | { problem: string } {
  if (typeof made !== 'string') return { problem: `gave ${made === null ? 'null' : typeof made}, not a URL` };
  let u: URL;
  try {
    u = new URL(made, base);
  } catch {
    return { problem: `gave ${JSON.stringify(made.slice(0, 80))}, not a URL` };
  }
  const b = new URL(base);
  if (u.origin !== b.origin) return { problem: `gave a URL on ${u.origin}, not on the origin of url (${b.origin})` };
  if (u.username !== '' || u.password !== '') return { problem: 'gave a URL with a user name or password' };
  const dir = b.pathname.slice(0, b.pathname.lastIndexOf('/') + 1);
  if (!u.pathname.startsWith(dir))
    return { problem: `gave a URL whose path (${u.pathname.slice(0, 80)}) is not under ${dir}, the directory of url` };
  return { url: u.href };
}
