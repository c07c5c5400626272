/**
 * A schema's issues said as configuration problems: each by its path, with what would be right (the
 * values a key takes, the key a typo meant, what is wrong inside the shape given of a union).
 */
import { z } from 'zod';
import { acceptedValues, fittingBranch, knownKeys, nearest, shapesOf } from './hints.ts';
import { formatPath } from './expand.ts';

/** formatIssues: the problems, one line each (`sinks[2].url: must be an absolute https or http URL`). */
export function formatIssues(issues: readonly z.core.$ZodIssue[], schema: z.ZodType, input: unknown): string[] {
  const out: string[] = [];
  let json: unknown = null;
  for (const issue of issues) {
    if (issue.code === 'unrecognized_keys') {
      json ??= z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' });
      const known = knownKeys(json, input, issue.path);
      for (const key of issue.keys) {
        const near = nearest(key, known);
        out.push(`${formatPath([...issue.path, key])}: unknown key${near === null ? '' : ` (did you mean ${near}?)`}`);
      }
      continue;
    }
    // one value or a list of them (and other unions of shapes): what is wrong in the shape given
    const branch = fittingBranch(issue);
    // a name that is none of the names: said with the names below, one or a list of them
    if (branch !== null && !branch.every((i) => i.code === 'invalid_value' && i.path.length === issue.path.length)) {
      out.push(...formatIssues(branch, schema, input));
      continue;
    }
    out.push(`${formatPath(issue.path)}: ${describe(issue)}`);
  }
  return out;
}

function describe(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case 'invalid_union': {
      if ('discriminator' in issue && 'options' in issue) {
        return `must be one of ${(issue.options as unknown[]).join(' | ')}`;
      }
      const values = acceptedValues(issue);
      const shapes = shapesOf(issue);
      if (values !== null) {
        const or = shapes.other.map((t) => (t === 'array' ? 'a list of them' : article(t)));
        return `must be one of ${values.join(' | ')}${or.length === 0 ? '' : ` (or ${or.join(' or ')})`}`;
      }
      return shapes.none ? `must be ${shapes.other.map(article).join(' or ')}` : issue.message;
    }
    case 'invalid_type':
      return issue.input === undefined ? `is required (${issue.expected})` : `must be ${article(issue.expected)}`;
    case 'invalid_value':
      return `must be one of ${issue.values.map((v) => String(v)).join(' | ')}`;
    case 'too_small':
      return issue.origin === 'array'
        ? `must have at least ${issue.minimum} item${Number(issue.minimum) === 1 ? '' : 's'}`
        : issue.origin === 'string'
          ? issue.message.startsWith('Too small')
            ? 'must not be empty'
            : issue.message
          : `must be at least ${issue.minimum}`;
    case 'too_big':
      return `must be at most ${issue.maximum}`;
    default:
      return issue.message;
  }
}

function article(t: string): string {
  return /^[aeiou]/.test(t) ? `an ${t}` : `a ${t}`;
}
