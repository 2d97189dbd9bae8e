import { afterAll } from 'vitest';
import { removeTempDirs } from './temp-dirs.js';

// A setup file of every test file: registered first, this afterAll runs after the file's own
// (which stop the processes that use the folders).
afterAll(removeTempDirs);
