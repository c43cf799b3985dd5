// Build step: the client emitter copies the client runtime's TypeScript source beside the
// generated client, so the compiled package ships that source next to its compiled form.
import { copyFileSync } from 'node:fs';

copyFileSync(
  new URL('../src/client/runtime.ts', import.meta.url),
  new URL('../dist/client/runtime.ts', import.meta.url),
);
