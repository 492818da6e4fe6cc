import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Real temporary data directories, removed by `cleanup` (call it from `afterAll`). */
export class TempDirs {
  private readonly dirs: string[] = [];

  async make(prefix = 'holon-store-'): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), prefix));
    this.dirs.push(dir);
    return dir;
  }

  async cleanup(): Promise<void> {
    await Promise.all(this.dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
  }
}
