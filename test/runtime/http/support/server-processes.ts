/**
 * Server processes of one fixture on one store, and a runtime of the test's own on that store,
 * for a describe block about several processes (create-or-send, flow control, contention,
 * Idempotency-Key, callback URLs): set up in `beforeAll`, stopped and torn down in `afterAll`.
 */
import { afterAll, beforeAll } from 'vitest';
import { MachineRuntime } from '../../../../src/runtime/engine/machine-runtime.js';
import { listeningUrl, startFixture, type FixtureProcess } from '../../../support/child-process.js';
import type { StoreBackend } from '../../../support/stores.js';

/** What {@link useServerProcesses} started, once `beforeAll` ran. */
export interface ServerProcesses {
  /** The listening URL of each process. */
  readonly urls: string[];
  /** The test's own runtime on the processes' store. */
  readonly runtime: MachineRuntime;
}

/**
 * Starts `count` (2) processes of the server fixture `script`, each given the store's URL and
 * then `args`, once `backend` is set up; the fixture prints `LISTENING <url>`.
 */
export function useServerProcesses(
  backend: StoreBackend,
  script: string,
  args: string[],
  options: { env?: NodeJS.ProcessEnv; count?: number; timeoutMs?: number } = {},
): ServerProcesses {
  const servers: FixtureProcess[] = [];
  const urls: string[] = [];
  let runtime: MachineRuntime | undefined;
  beforeAll(async () => {
    await backend.setUp();
    runtime = await MachineRuntime.open({
      databaseUrl: backend.url(),
      migrate: true,
      worker: false,
    });
    for (let index = 0; index < (options.count ?? 2); index += 1) {
      const server = startFixture(script, [backend.url(), ...args], options.env);
      servers.push(server);
      urls.push(await listeningUrl(server));
    }
  }, options.timeoutMs ?? 120_000);
  afterAll(async () => {
    for (const server of servers) {
      server.child.kill('SIGTERM');
      await server.exited;
    }
    await runtime?.close();
    await backend.tearDown();
  });
  return {
    urls,
    get runtime() {
      if (runtime === undefined) throw new Error('The server processes are not started yet.');
      return runtime;
    },
  };
}
