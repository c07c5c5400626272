/**
 * nodeVersionProblem: the bridge needs Node.js 22.21+ or 24.5+ (`engines` in package.json):
 * `node:sqlite` without a flag, type stripping, and the APIs the bridge uses. An older Node
 * would fail later and obscurely (`No such built-in module: node:sqlite` after `validate` said
 * the configuration is fine), so the CLI checks first and says what it needs.
 */
export const REQUIRED_NODE = '22.21 or later in 22.x, or 24.5 or later';

export function nodeVersionProblem(version: string = process.versions.node): string | null {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  const ok = (major === 22 && minor >= 21) || (major === 24 && minor >= 5) || major >= 25;
  return ok
    ? null
    : `se-bridge needs Node.js ${REQUIRED_NODE} (this is Node.js ${version}); install a newer Node, or use the single executable, which brings its own`;
}
