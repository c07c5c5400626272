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
