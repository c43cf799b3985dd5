/**
 * The client side of the benches' router servers (bench/router-server.ts): spawns one under tsx
 * with the source build of the package, and waits for its `READY <port>` line.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

/** Starts `script` on `storeUrl`; answers the child and its base URL once it listens. */
export async function startServer(
  script: string,
  storeUrl: string,
): Promise<{ child: ChildProcess; base: string }> {
  const child = spawn(
    process.execPath,
    ['--conditions=machine-routes-source', '--import', 'tsx', script, storeUrl],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const lines = createInterface({ input: child.stdout! });
  const port = await new Promise<number>((resolve, reject) => {
    lines.on('line', (line) => {
      if (line.startsWith('READY ')) resolve(Number(line.slice(6)));
    });
    child.once('exit', (code) => reject(new Error(`server exited (${code})`)));
  });
  return { child, base: `http://127.0.0.1:${port}` };
}
