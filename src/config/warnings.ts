/**
 * configWarnings: what is valid but probably not meant. `validate` prints each as a warning
 * (exit 0 all the same) and `run` logs it at start.
 */
import { roleOf } from '../registry/sinks.ts';
import type { BridgeConfig } from './schema.ts';

/** What a preparation takes when its filter names no types (see delivery/route.ts). */
const PREPARES = new Set(['scheduled', 'updated']);

export function configWarnings(config: BridgeConfig): string[] {
  const out: string[] = [];
  config.sinks.forEach((s, i) => {
    // a preparation hook that does not give the VM back (an exec hook): its types are all it takes
    const role = roleOf(s);
    if (!role.prepare || role.undoes || s.filter.types === undefined) return;
    const others = s.filter.types.filter((t) => !PREPARES.has(t));
    if (others.length === 0) return;
    out.push(
      `sinks[${i}].filter.types: this preparation (prepare: true) also runs for ${others.join(', ')}, so it prepares the VM again ` +
        'when the event is approved, starts or is over; without types it takes scheduled, updated, and started for an event never seen Scheduled',
    );
  });
  config.sinks.forEach((s, i) => {
    if (s.type !== 'webhook' || typeof s.urlTemplate !== 'string') return;
    const raw = unencodedFields(s.urlTemplate);
    if (raw.length === 0) return;
    out.push(
      `sinks[${i}].urlTemplate: ${raw.join(', ')} ${raw.length === 1 ? 'is' : 'are'} joined into the URL without $encodeUrlComponent: ` +
        'a value from IMDS with a /, ?, # or .. in it would change the request path; wrap it: $encodeUrlComponent(data.eventId)',
    );
  });
  return out;
}

/**
 * unencodedFields: the CloudEvent fields (`data.…`, `subject`, `id`) a JSONata expression uses
 * outside any $encodeUrlComponent or $encodeUrl call. A reading of the text, not a parse: strings
 * are skipped, calls are tracked by their parentheses.
 */
export function unencodedFields(expression: string): string[] {
  const found = new Set<string>();
  const calls: string[] = [];
  const text = expression;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '"' || c === "'") {
      for (i++; i < text.length && text[i] !== c; i++) if (text[i] === '\\') i++;
      continue;
    }
    if (c === '(') {
      calls.push(/\$(\w+)\s*$/.exec(text.slice(Math.max(0, i - 40), i))?.[1] ?? '');
      continue;
    }
    if (c === ')') {
      calls.pop();
      continue;
    }
    if (/[\w$.]/.test(text[i - 1] ?? ' ')) continue;
    const field = /^(data(?:\.\w+)+|subject\b|id\b)/.exec(text.slice(i))?.[1];
    if (field === undefined) continue;
    if (!calls.some((name) => name === 'encodeUrlComponent' || name === 'encodeUrl')) found.add(field);
    i += field.length - 1;
  }
  return [...found];
}
