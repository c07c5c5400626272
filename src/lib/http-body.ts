/**
 * readBounded reads an HTTP body (a request's or a response's) up to `maxBytes`, so that no
 * peer can make the process hold more. What happens to the rest when the body is larger:
 *
 * - `destroy`: stop reading and destroy the stream (a response we give up on);
 * - `resume`: stop keeping it and let it flow away in the background (a request that is
 *   still to be answered, e.g. with 413);
 * - `drain`: read it to the end without keeping it (a connection to be reused).
 *
 * `cutOff` names the error a reader ends a body with when it refuses to read more (undici's
 * `maxResponseSize`): the body is then kept as far as it was read, and said to overflow.
 */
export interface BoundedBody {
  /** At most maxBytes. */
  readonly bytes: Buffer;
  /** The body was larger than maxBytes. */
  readonly overflow: boolean;
}

type Body = AsyncIterable<Buffer> & { destroy?(): unknown; resume?(): unknown };

export async function readBounded(
  body: Body,
  maxBytes: number,
  onOverflow: 'destroy' | 'resume' | 'drain',
  cutOff: (err: unknown) => boolean = () => false,
): Promise<BoundedBody> {
  const chunks: Buffer[] = [];
  let size = 0;
  let overflow = false;
  try {
    for await (const chunk of body) {
      if (!overflow) chunks.push(chunk);
      size += chunk.length;
      if (size <= maxBytes || overflow) continue;
      overflow = true;
      if (onOverflow === 'destroy') {
        body.destroy?.();
        break;
      }
      if (onOverflow === 'resume') {
        body.resume?.();
        break;
      }
    }
  } catch (err) {
    // a body its reader ended for being too large (cutOff says which error that is): kept as far as read
    if (!cutOff(err)) throw err;
    overflow = true;
  }
  const all = Buffer.concat(chunks);
  return { bytes: all.length > maxBytes ? all.subarray(0, maxBytes) : all, overflow };
}

/** text decodes body bytes as UTF-8, replacing what is not. */
export function text(body: BoundedBody): string {
  return new TextDecoder('utf-8', { fatal: false }).decode(body.bytes);
}
