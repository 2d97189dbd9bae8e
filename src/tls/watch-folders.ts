import { lstatSync, watch, type FSWatcher } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { errorCode } from './error-code.js';
import type { ListenerTlsFiles } from './read-listener-pair.js';

/**
 * A certificate and key are usually replaced one after the other: events within this time
 * are one change, read once both files are likely written.
 */
const WATCH_DEBOUNCE_MS = 200;

export interface FolderWatch {
  /** Opens every watch again, on the folders of the files as they are now. */
  rewatch(): void;
  close(): void;
}

/**
 * The folders, not the files: a file replaced by a rename (or Kubernetes' swap of a
 * symlinked folder) leaves a watch on the old file deaf. Every event of a folder counts,
 * since the names it reports vary with the way the file was replaced. A watch follows the
 * folder it was opened on (an inode), not its path: a folder renamed away, or a symlink in
 * the path pointed elsewhere, leaves it on the old one. So the folders that hold such a
 * symlink are watched too, and every watch is opened again, by path, at each change.
 */
export function watchFolders(
  files: () => ListenerTlsFiles,
  log: { error(fields: Record<string, unknown>, msg: string): void },
  onChange: () => void,
): FolderWatch {
  let watchers: FSWatcher[] = [];
  let timer: NodeJS.Timeout | undefined;
  const rewatch = (): void => {
    for (const watcher of watchers) watcher.close();
    const { certFile, keyFile } = files();
    const fileFolders = [dirname(certFile), dirname(keyFile)];
    const folders = new Set([...fileFolders, ...fileFolders.flatMap(symlinkParents)]);
    watchers = [];
    for (const folder of folders) {
      const unwatched = (error: unknown): void =>
        log.error({ folder, reason: errorCode(error) }, 'TLS certificate folder not watched');
      try {
        const watcher = watch(folder, { persistent: false }, () => {
          clearTimeout(timer);
          timer = setTimeout(() => {
            rewatch();
            onChange();
          }, WATCH_DEBOUNCE_MS);
          timer.unref();
        });
        watcher.on('error', unwatched);
        watchers.push(watcher);
      } catch (error) {
        // A folder that does not exist (yet): SIGHUP still reloads.
        unwatched(error);
      }
    }
  };
  return {
    rewatch,
    close() {
      clearTimeout(timer);
      for (const watcher of watchers) watcher.close();
      watchers = [];
    },
  };
}

/** The folders holding a symlink on the way to `folder` (its own name included). */
function symlinkParents(folder: string): string[] {
  const parents: string[] = [];
  for (let path = resolve(folder); dirname(path) !== path; path = dirname(path)) {
    try {
      if (lstatSync(path).isSymbolicLink()) parents.push(dirname(path));
    } catch {
      // Not there (yet): the watch of the folder itself says so.
    }
  }
  return parents;
}
