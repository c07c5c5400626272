/**
 * What no test of the suite may do, found in the syntax tree of each test file (TypeScript's own
 * parser): compare an elapsed wall-clock time in an assertion, await a fixed sleep outside a
 * bounded polling loop, or leave a test out (`.skip`, `.only`, `.todo`). A test that needs time to
 * pass waits for a condition (test/helpers.ts `waitFor`); one that proves "nothing happened" does
 * so after something that shows the code had its chance.
 */
import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

/** Finding: one breach, where it is (1-based line) and which rule it breaks. */
export interface Finding {
  readonly file: string;
  readonly line: number;
  readonly rule: 'elapsed-time' | 'sleep' | 'left-out';
  readonly text: string;
}

const COMPARE = new Set(['toBeLessThan', 'toBeLessThanOrEqual', 'toBeGreaterThan', 'toBeGreaterThanOrEqual', 'toBeCloseTo']);
const SLEEPS = new Set(['sleep', 'delay', 'wait', 'setTimeout', 'setTimeoutPromise']);
const LEFT_OUT = new Set(['skip', 'only', 'todo']);
const RUNNERS = new Set(['it', 'test', 'describe', 'suite', 'bench']);
/** A name that holds an instant or a duration: `at`, `t0`, `startedAt`, `elapsedMs`, `since`, ... */
const TIME_NAME = /^(at|t\d+|since|until|start|started|stamps?|notBefore|deadline)$|[a-z](At|Time)$/;
/** A name that holds a duration measured on the clock. */
const DURATION_NAME = /^(atMs|elapsed\w*|took\w*|lag\w*|gaps?|secondsTo\w*|msTo\w*)$/;

/** testFiles lists the test files under `dirs` of `root` (relative paths), node_modules left out. */
export function testFiles(root: string, dirs: readonly string[]): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (entry.name !== 'node_modules') walk(path);
      } else if (entry.name.endsWith('.test.ts')) out.push(relative(root, path));
    }
  };
  for (const d of dirs) walk(join(root, d));
  return out.sort();
}

/** hygieneOf reads one test file's text and returns every breach in it. */
export function hygieneOf(file: string, text: string): Finding[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const findings: Finding[] = [];
  const names = namesOf(source);
  const say = (node: ts.Node, rule: Finding['rule']): void => {
    const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
    findings.push({ file, line, rule, text: node.getText(source).split('\n')[0]!.slice(0, 120) });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node)) {
      const compared = comparedIn(node);
      if (compared !== null && (compared.some((e) => isElapsed(e, names)) || durationAgainstNumber(compared))) say(node, 'elapsed-time');
      if (isLeftOut(node.expression)) say(node.expression, 'left-out');
    }
    if (ts.isAwaitExpression(node) && isSleep(node.expression) && !insideLoop(node)) say(node, 'sleep');
    ts.forEachChild(node, visit);
  };
  visit(source);
  return findings;
}

/** comparedIn: for `expect(a).toBeLessThan(b)` (also `.not.`, `.soft`), the expressions a and b; else null. */
function comparedIn(call: ts.CallExpression): ts.Expression[] | null {
  if (!ts.isPropertyAccessExpression(call.expression) || !COMPARE.has(call.expression.name.text)) return null;
  let target: ts.Expression = call.expression.expression;
  while (ts.isPropertyAccessExpression(target)) target = target.expression;
  if (!ts.isCallExpression(target) || !/^expect(\.soft)?$/.test(target.expression.getText())) return null;
  return [...target.arguments, ...call.arguments];
}

/** isClockRead: Date.now(), performance.now(), process.hrtime(...), process.hrtime.bigint(). */
function isClockRead(node: ts.Node): boolean {
  if (!ts.isCallExpression(node)) return false;
  const callee = node.expression.getText();
  return callee === 'Date.now' || callee === 'performance.now' || callee.startsWith('process.hrtime');
}

/** isTimeLike: an instant: a clock read, a parsed date, a name that holds one, or the least or greatest of them. */
function isTimeLike(node: ts.Expression, instants: ReadonlySet<string> = NONE): boolean {
  const like = (e: ts.Expression): boolean => isTimeLike(e, instants);
  if (isClockRead(node)) return true;
  if (ts.isParenthesizedExpression(node) || ts.isNonNullExpression(node) || ts.isSpreadElement(node)) return like(node.expression);
  if (ts.isIdentifier(node)) return TIME_NAME.test(node.text) || instants.has(node.text);
  if (ts.isPropertyAccessExpression(node)) return TIME_NAME.test(node.name.text);
  if (ts.isElementAccessExpression(node)) return like(node.expression);
  if (ts.isBinaryExpression(node) && /^[*/]$/.test(node.operatorToken.getText())) return isClockRead(node.left) || isClockRead(node.right);
  if (ts.isCallExpression(node)) {
    const callee = node.expression.getText();
    if (callee === 'Date.parse' || callee.endsWith('.getTime')) return true;
    if (/^Math\.(max|min)$/.test(callee)) return node.arguments.some(like);
    // xs.map((r) => r.at), xs.at(-1)
    if (ts.isPropertyAccessExpression(node.expression) && node.expression.name.text === 'map') {
      const fn = node.arguments[0];
      return fn !== undefined && ts.isArrowFunction(fn) && !ts.isBlock(fn.body) && like(fn.body);
    }
    if (ts.isPropertyAccessExpression(node.expression) && node.expression.name.text === 'at') return like(node.expression.expression);
  }
  return false;
}

const NONE: ReadonlySet<string> = new Set();

/** durationAgainstNumber: a duration measured on the clock, by its name (`atMs`, `secondsToNotBefore`), held to a fixed number. */
function durationAgainstNumber([actual, expected]: ts.Expression[]): boolean {
  if (actual === undefined || expected === undefined || !ts.isNumericLiteral(expected)) return false;
  let named = false;
  const visit = (n: ts.Node): void => {
    if (ts.isIdentifier(n) && DURATION_NAME.test(n.text)) named = true;
    ts.forEachChild(n, visit);
  };
  visit(actual);
  return named;
}

/** Names: the file's variables that hold instants (`const at = reads.map((r) => r.at)`) and those that hold a time difference (`gaps`). */
interface Names {
  readonly instants: Set<string>;
  readonly elapsed: Set<string>;
}

/**
 * isElapsed: the expression measures time that passed: a difference with an instant on either
 * side (`Date.now() - t0`, `b.at - a.at`, `notBefore - 5000`), arithmetic on a clock read, or a
 * variable that holds a difference (`gaps`).
 */
function isElapsed(node: ts.Node, names: Names): boolean {
  let found = false;
  const like = (e: ts.Expression): boolean => isTimeLike(e, names.instants);
  const visit = (n: ts.Node): void => {
    if (found) return;
    if (ts.isBinaryExpression(n)) {
      const op = n.operatorToken.kind;
      if (op === ts.SyntaxKind.MinusToken && (like(n.left) || like(n.right))) found = true;
      if (op === ts.SyntaxKind.PlusToken && (isClockRead(n.left) || isClockRead(n.right))) found = true;
    }
    if (ts.isIdentifier(n) && names.elapsed.has(n.text)) found = true;
    ts.forEachChild(n, visit);
  };
  visit(node);
  return found;
}

/** namesOf: the variables of a file that hold instants or time differences, in the order they are declared. */
function namesOf(source: ts.SourceFile): Names {
  const names: Names = { instants: new Set(), elapsed: new Set() };
  const visit = (n: ts.Node): void => {
    if (ts.isVariableDeclaration(n) && ts.isIdentifier(n.name) && n.initializer !== undefined) {
      if (isTimeLike(n.initializer, names.instants)) names.instants.add(n.name.text);
      else if (isDifference(n.initializer, names)) names.elapsed.add(n.name.text);
    }
    ts.forEachChild(n, visit);
  };
  visit(source);
  return names;
}

/** isDifference: somewhere in it (callbacks included: `xs.map((t, i) => t - at[i])`), one instant less another. */
function isDifference(node: ts.Node, names: Names): boolean {
  let hit = false;
  const walk = (m: ts.Node): void => {
    if (hit) return;
    const minus = ts.isBinaryExpression(m) && m.operatorToken.kind === ts.SyntaxKind.MinusToken;
    if (minus && isTimeLike(m.left, names.instants) && isTimeLike(m.right, names.instants)) hit = true;
    ts.forEachChild(m, walk);
  };
  walk(node);
  return hit;
}

/** isSleep: a fixed pause: `new Promise((r) => setTimeout(r, N))`, `sleep(N)`, `delay(N)`, timers/promises' `setTimeout(N)`. */
function isSleep(node: ts.Expression): boolean {
  if (ts.isParenthesizedExpression(node)) return isSleep(node.expression);
  if (ts.isNewExpression(node) && node.expression.getText() === 'Promise') {
    const executor = node.arguments?.[0];
    if (executor === undefined || !ts.isFunctionLike(executor)) return false;
    let timer = false;
    const visit = (n: ts.Node): void => {
      if (ts.isCallExpression(n) && /^(setTimeout|globalThis\.setTimeout)$/.test(n.expression.getText())) timer = true;
      ts.forEachChild(n, visit);
    };
    visit(executor);
    return timer;
  }
  if (!ts.isCallExpression(node)) return false;
  const callee = node.expression;
  const name = ts.isIdentifier(callee) ? callee.text : ts.isPropertyAccessExpression(callee) ? callee.name.text : '';
  return SLEEPS.has(name) && node.arguments.length > 0;
}

/** insideLoop: the node is in the body of a for/while/do loop of its own function (a bounded poll). */
function insideLoop(node: ts.Node): boolean {
  for (let n = node.parent; n !== undefined; n = n.parent) {
    if (ts.isFunctionLike(n)) return false;
    if (ts.isForStatement(n) || ts.isForOfStatement(n) || ts.isForInStatement(n) || ts.isWhileStatement(n) || ts.isDoStatement(n)) {
      return true;
    }
  }
  return false;
}

/** isLeftOut: `it.skip`, `describe.only`, `test.todo`, `it.skip.each`, `xit`, `fit`, ... */
function isLeftOut(callee: ts.Expression): boolean {
  if (ts.isIdentifier(callee)) return /^(xit|xtest|xdescribe|fit|fdescribe)$/.test(callee.text);
  const parts: string[] = [];
  for (let e: ts.Expression = callee; ;) {
    if (ts.isPropertyAccessExpression(e)) {
      parts.unshift(e.name.text);
      e = e.expression;
    } else if (ts.isCallExpression(e)) {
      e = e.expression;
    } else {
      if (ts.isIdentifier(e)) parts.unshift(e.text);
      break;
    }
  }
  return RUNNERS.has(parts[0] ?? '') && parts.slice(1).some((p) => LEFT_OUT.has(p));
}
