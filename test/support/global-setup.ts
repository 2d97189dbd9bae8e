import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The run's own temp directory, once per run: every test process, and every process a test
 * starts, gets it as TMPDIR (os.tmpdir() reads it on each call), so what a test forgets to
 * remove is found here at the end, named, and removed, never left in the machine's /tmp.
 * The teardown fails the run on it: each test removes what it makes (a stopped gateway its
 * config folder, a finished file its certificates).
 */
export default function setup(): () => void {
  const outer = tmpdir();
  const root = mkdtempSync(join(outer, 'accounts-gateway-tests-'));
  process.env.TMPDIR = root;
  // Node's compile cache for every process of the run (the test workers, and each gateway and
  // CLI they start, hundreds of cold starts of dist/): kept between runs, beside the
  // dependencies it mostly holds. Node checks each entry against its source.
  process.env.NODE_COMPILE_CACHE ??= fileURLToPath(
    new URL('../../node_modules/.cache/node-compile-cache', import.meta.url),
  );
  return () => {
    process.env.TMPDIR = outer;
    const left = readdirSync(root);
    rmSync(root, { recursive: true, force: true });
    if (left.length > 0)
      throw new Error(
        `the tests left ${left.length} entries in the temp directory (each test removes what it makes): ${left.slice(0, 20).join(', ')}${left.length > 20 ? ', …' : ''}`,
      );
  };
}
