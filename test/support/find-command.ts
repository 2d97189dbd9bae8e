import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

/** Where `command` is: on the PATH, or in an sbin folder (where Debian puts nginx). */
export function findCommand(command: string): string | undefined {
  const found = spawnSync('sh', ['-c', `command -v ${command}`], { encoding: 'utf8' });
  if (found.status === 0 && found.stdout.trim() !== '') return found.stdout.trim();
  for (const dir of ['/usr/sbin', '/usr/local/sbin', '/sbin']) {
    if (existsSync(join(dir, command))) return join(dir, command);
  }
  return undefined;
}
