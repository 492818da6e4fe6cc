#!/usr/bin/env node
// The `holon-xstate` command (package.json "bin"; `npm start` runs it too): src/cli.ts run
// through tsx's loader in this same process, so it works from a fresh clone without a build and
// never runs a stale dist/. One process does the work, and it is the one signals reach.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli.ts');
