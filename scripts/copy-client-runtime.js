// Build step: the client emitter copies the client runtime (and the TanStack bindings' runtime)'s TypeScript source beside the
// generated client, so the compiled package ships that source next to its compiled form.
import { copyFileSync } from 'node:fs';

for (const file of ['runtime.ts', 'runtime-types.ts', 'query-runtime.ts']) {
  copyFileSync(
    new URL(`../src/client/${file}`, import.meta.url),
    new URL(`../dist/client/${file}`, import.meta.url),
  );
}
