// The linter `npm test` runs: ESLint's and typescript-eslint's recommended rules, the
// syntactic set only (no type information), so that it takes seconds on two cores; tsc does
// the type checking. Every rule changed here says why. Formatting is Prettier's business
// (`npm run format:check`, also part of `npm test`), so no stylistic rule is turned on here.
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

// Code the Lambdas bundle writes its schemas with zod's functional build: the classic API's
// chained methods come with every schema, the JSON Schema converter included, and would add
// about 60 KB to each bundle. infra/openapi converts the schemas, outside the bundles.
const classicZod = { name: 'zod', message: 'use zod/mini (z.optional(s), s.check(z.maxLength(n), z.meta({...})))', allowTypeImports: true };

export default defineConfig(
  // Generated (peggy) or built, not written by hand.
  { ignores: ['lib/filters/sql-parser.js', 'dist/**', 'cdk.out/**', 'coverage/**', '**/node_modules/**'] },
  {
    files: ['**/*.ts', '**/*.js', '**/*.mjs'],
    extends: [js.configs.recommended, tseslint.configs.recommended],
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // A leading underscore marks a binding kept on purpose: a parameter an interface
      // requires, or a field taken out of an object so that the rest goes on without it.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
      // Expected hex dumps and caret lines are written as they print, spaces and all.
      'no-regex-spaces': 'off',
    },
  },
  {
    // Layers import one way: the broker, the notifications, the protocols and the handlers
    // decide, and reach the table only through lib/store operations. lib/deps.ts only builds
    // the clients the store is given.
    files: ['lib/**/*.ts', 'functions/**/*.ts'],
    ignores: ['lib/store/**', 'lib/deps.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: [classicZod],
          patterns: [
            {
              group: ['@aws-sdk/lib-dynamodb', '@aws-sdk/client-dynamodb'],
              message: 'read and write the table through a lib/store operation',
              allowTypeImports: true,
            },
          ],
        },
      ],
    },
  },
  {
    // The same rule where the block above does not reach.
    files: ['lib/store/**/*.ts', 'lib/deps.ts'],
    rules: { '@typescript-eslint/no-restricted-imports': ['error', { paths: [classicZod] }] },
  },
  {
    // Plain JavaScript run by Node (the CLI's bin, tools): tsc does not see these files.
    files: ['**/*.js', '**/*.mjs'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly' } },
  },
  {
    // The client's declarations copy @azure/service-bus's, `WithResponse<{}>` and option
    // interfaces that add nothing to their base included, so the two stay interchangeable.
    files: ['lib/client/**/*.ts'],
    rules: { '@typescript-eslint/no-empty-object-type': 'off' },
  },
);
