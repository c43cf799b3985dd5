/**
 * The server side of the benches' router servers (`tsx <server.ts> <store url>`, started by
 * bench/start-server.ts): the store at argv[2], a `MachineRouter` on it with the bench's
 * registrations, mounted on Fastify on a free port; prints `READY <port>` and closes on SIGTERM.
 */
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import { mountFastify } from '../src/runtime/http/adapters/fastify.js';
import { MachineRouter } from '../src/runtime/http/machine-router.js';
import { MachineRuntime } from '../src/runtime/engine/machine-runtime.js';
import { openStore } from '../src/runtime/persistence/open-store.js';
import type { Store } from '../src/runtime/persistence/store.js';

/**
 * Serves the routes `register` adds; `beforeMount` adds routes of the bench's own (e.g. the
 * server's CPU time, which may read the store) before the router's.
 */
export async function serveRouter(
  register: (router: MachineRouter) => void,
  beforeMount?: (app: FastifyInstance, store: Store) => void,
): Promise<void> {
  const store = await openStore(process.argv[2]!, { migrate: true });
  const logger = {
    error: (message: string, meta: { error: unknown }) => console.error(message, meta.error),
  };
  const router = new MachineRouter({ runtime: new MachineRuntime({ store }), logger });
  register(router);
  const app = Fastify({ logger: false });
  beforeMount?.(app, store);
  await mountFastify(app, router);
  await app.listen({ host: '127.0.0.1', port: 0 });
  process.stdout.write(`READY ${(app.server.address() as AddressInfo).port}\n`);
  process.once(
    'SIGTERM',
    () =>
      void app
        .close()
        .then(() => store.close())
        .then(() => process.exit(0)),
  );
}
