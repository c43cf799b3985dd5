/**
 * Config the race test's CLI process loads. Importing it marks the CLI as started (a file in
 * `MR_RACE_DIR`), so the test knows the cancel is about to ask for the lock.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { defineConfig } from 'machine-routes';
import { raceMachine } from './machines.js';

const dir = process.env['MR_RACE_DIR'];
if (dir !== undefined) writeFileSync(join(dir, 'cli-loaded'), String(process.pid));

export default defineConfig({
  registrations: [{ machine: raceMachine, prefix: 'races', create: true }],
});
