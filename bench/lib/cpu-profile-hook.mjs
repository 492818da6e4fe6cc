// A CPU profile of a process the bench does not start itself (`--cpu-prof` is not allowed in
// NODE_OPTIONS): `NODE_OPTIONS="--import <this file>" HOLON_CPU_PROFILE_DIR=<dir>`. The profiler
// starts on SIGWINCH (not SIGUSR2, which close-with-grace takes as a stop; after boot, when the load begins) and the profile is written at exit as
// <dir>/<pid>.cpuprofile. The in-thread inspector session answers synchronously, so the exit
// handler can stop the profiler and write the file.
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { join } from 'node:path';

const dir = process.env.HOLON_CPU_PROFILE_DIR;
if (dir) {
  const session = new Session();
  session.connect();
  let started = false;
  process.on('SIGWINCH', () => {
    if (started) return;
    started = true;
    session.post('Profiler.enable', () => session.post('Profiler.start'));
  });
  process.on('exit', () => {
    if (!started) return;
    session.post('Profiler.stop', (error, result) => {
      if (!error && result) writeFileSync(join(dir, `${process.pid}.cpuprofile`), JSON.stringify(result.profile));
    });
  });
}
