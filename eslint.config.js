// The linter: ESLint's recommended rules, typescript-eslint's, and its type-aware rules for
// what a daemon cannot afford: a promise nobody awaits or catches, an await of something that
// is not a promise, a promise where a plain value is expected; plus unused code and imports.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'build/**', 'node_modules/**', 'examples/**', 'bench/results/**', '.stryker-tmp/**', 'reports/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      parserOptions: { projectService: { allowDefaultProject: ['bin/*.js', 'eslint.config.js'] }, tsconfigRootDir: import.meta.dirname },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      '@typescript-eslint/no-unused-expressions': 'error',
      '@typescript-eslint/no-unnecessary-type-assertion': 'error',
      'no-unused-private-class-members': 'error',
      'no-duplicate-imports': 'error',
      // TypeScript checks names; the one JavaScript file is Node's
      'no-undef': 'off',
    },
  },
  {
    // tests, their kit, the benchmarks and the scripts read untyped JSON and drive a browser's DOM
    files: ['test/**', 'testkit/**', 'bench/**', 'scripts/**', 'sinks/**/*.test.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // each `declare module` block of a declaration file imports for itself
    files: ['**/*.d.ts'],
    rules: { 'no-duplicate-imports': 'off' },
  },
);
