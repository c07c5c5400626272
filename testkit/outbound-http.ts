/**
 * outboundHttpOutsideClient reads a source file and names every way it could make an HTTP request
 * (or open a connection) other than through the project's client, src/lib/http-client.ts, which
 * is undici's: a global `fetch`, `WebSocket`, `EventSource` or `XMLHttpRequest`; `request`, `get`,
 * `connect` or `createConnection` of node:http, node:https, node:http2, node:net or node:tls,
 * imported by name, called on such a module (imported, required, taken with getBuiltinModule or
 * through src/lib/node-http.ts) or on its `Agent`; undici itself imported elsewhere. Read from
 * the syntax tree (TypeScript's parser), not from the text, so comments and strings never count.
 */
import ts from 'typescript';

const NETWORK_MODULES = new Set(['http', 'https', 'http2', 'net', 'tls']);
const CALLS = new Set(['request', 'get', 'connect', 'createConnection', 'Agent']);
const GLOBALS = new Set(['fetch', 'WebSocket', 'EventSource', 'XMLHttpRequest']);

const bare = (specifier: string): string => specifier.replace(/^node:/, '');

/** moduleOf: the network module an expression stands for (`process.getBuiltinModule('node:https')`, `require('tls')`), or null. */
function moduleOf(node: ts.Expression): string | null {
  if (!ts.isCallExpression(node) || node.arguments.length !== 1) return null;
  const arg = node.arguments[0]!;
  if (!ts.isStringLiteralLike(arg)) return null;
  const callee = node.expression.getText();
  if (callee !== 'process.getBuiltinModule' && callee !== 'require') return null;
  return NETWORK_MODULES.has(bare(arg.text)) ? bare(arg.text) : null;
}

export function outboundHttpOutsideClient(fileName: string, text: string): string[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found: string[] = [];
  /** Local names bound to a network module (`import * as net`, `const https = getBuiltinModule(...)`, node-http.ts's `http`). */
  const modules = new Set<string>();
  const say = (node: ts.Node, what: string) =>
    found.push(`${fileName}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}: ${what}`);

  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier) && !node.importClause?.isTypeOnly) {
      const from = node.moduleSpecifier.text;
      const named = node.importClause?.namedBindings;
      if (/^undici(\/|$)/.test(from)) say(node, `imports ${from}: undici is used through src/lib/http-client.ts alone`);
      if (NETWORK_MODULES.has(bare(from))) {
        if (named && ts.isNamespaceImport(named)) modules.add(named.name.text);
        if (node.importClause?.name) modules.add(node.importClause.name.text);
        if (named && ts.isNamedImports(named))
          for (const el of named.elements)
            if (!el.isTypeOnly && CALLS.has((el.propertyName ?? el.name).text)) say(el, `imports ${el.name.text} from ${from}`);
      }
      if (/(^|\/)node-http(\.ts|\.js)?$/.test(from) && named && ts.isNamedImports(named))
        for (const el of named.elements) if ((el.propertyName ?? el.name).text === 'http') modules.add(el.name.text);
    }
    if (ts.isVariableDeclaration(node) && node.initializer && moduleOf(node.initializer) !== null) {
      if (ts.isIdentifier(node.name)) modules.add(node.name.text);
      else if (ts.isObjectBindingPattern(node.name))
        for (const el of node.name.elements) {
          const name = el.propertyName ?? el.name;
          if (ts.isIdentifier(name) && CALLS.has(name.text)) say(el, `takes ${name.text} from ${node.initializer.getText()}`);
        }
    }
    if (ts.isCallExpression(node) && ts.isIdentifier(node.expression) && GLOBALS.has(node.expression.text))
      say(node, `calls ${node.expression.text}()`);
    if (ts.isNewExpression(node) && ts.isIdentifier(node.expression) && GLOBALS.has(node.expression.text))
      say(node, `makes a ${node.expression.text}`);
    if (ts.isPropertyAccessExpression(node) && CALLS.has(node.name.text)) {
      const target = node.expression;
      const viaModule = (ts.isIdentifier(target) && modules.has(target.text)) || moduleOf(target) !== null;
      if (viaModule) say(node, `uses ${target.getText()}.${node.name.text}`);
    }
    ts.forEachChild(node, visit);
  };
  // two passes: a module bound further down the file counts where it is used above
  visit(source);
  found.length = 0;
  visit(source);
  return found;
}
