import { execFile } from 'node:child_process';

/**
 * `syncfs(2)` of the file system holding `path`, through coreutils `sync -f` (Node has no
 * binding): one call makes every file written so far durable, directory entries included, where
 * per-file fsyncs would cost a journal commit each. Resolves `false` where it is unavailable.
 */
export function syncFileSystem(path: string): Promise<boolean> {
  if (process.platform !== 'linux') return Promise.resolve(false);
  return new Promise((resolve) => {
    execFile('sync', ['-f', path], (err) => resolve(err === null));
  });
}
