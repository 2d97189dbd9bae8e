// Lint rules for the whole repo (kept under .ci/ so the top level stays product files).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const layer = (folder, forbidden, message) => ({
  files: [`src/${folder}/**/*.ts`],
  rules: {
    'no-restricted-imports': [
      'error',
      { patterns: forbidden.map((group) => ({ group: [group], message })) },
    ],
  },
});

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.ci/node/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        projectService: true,
        tsconfigRootDir: import.meta.dirname + '/..',
      },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
    },
  },
  // Layers: pure parts import nothing of ours that does I/O; http never touches the
  // libraries behind auth and credentials directly.
  layer('routing', ['../*', '!../routing/*'], 'routing is pure: it imports nothing else of ours'),
  layer('cache', ['../*', '!../cache/*'], 'cache imports nothing else of ours'),
  layer('errors', ['../*', '!../errors/*'], 'errors imports nothing else of ours'),
  layer(
    'auth',
    ['../http/*', '../proxy/*', '**/http/*', '**/proxy/*'],
    'auth never imports http or proxy',
  ),
  layer(
    'credentials',
    ['../auth/*', '../http/*', '**/auth/*', '**/http/*'],
    'credentials never imports auth or http',
  ),
  {
    files: ['src/http/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: ['ioredis', 'jose', 'bcrypt'].map((name) => ({
            name,
            message: 'http reaches stores and verifiers through auth and credentials',
          })),
        },
      ],
    },
  },
  {
    files: ['**/*.js'],
    ...tseslint.configs.disableTypeChecked,
  },
);
