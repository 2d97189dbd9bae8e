// Lint rules for the whole repo (kept under .ci/ so the top level stays product files).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { importLayersRule } from './import-layers.ts';

const srcRoot = import.meta.dirname + '/../src';

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
  // Layers: every folder of src/ imports only the folders and libraries listed for it in
  // .ci/import-layers.ts.
  {
    files: ['src/**/*.ts'],
    plugins: { layers: { rules: { 'import-direction': importLayersRule(srcRoot) } } },
    rules: { 'layers/import-direction': 'error' },
  },
  {
    files: ['**/*.js', '**/*.cjs'],
    ...tseslint.configs.disableTypeChecked,
  },
  // Runs on any Node, before anything is installed (see its header): CommonJS, ES5.
  {
    files: ['.ci/check-node.cjs'],
    languageOptions: {
      sourceType: 'commonjs',
      ecmaVersion: 5,
      globals: {
        require: 'readonly',
        module: 'writable',
        __dirname: 'readonly',
        process: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-require-imports': 'off',
      '@typescript-eslint/no-var-requires': 'off',
    },
  },
);
