/**
 * must: a value the code knows is there (a regular expression's group that matched, an element a
 * check just found), said at run time rather than asserted to the compiler: if it is ever
 * missing, the error names what was expected instead of a TypeError further on.
 */
export function must<T>(value: T | null | undefined, what: string): T {
  if (value === null || value === undefined) throw new Error(`${what} is missing`);
  return value;
}
