/**
 * The server of bench/create-or-send/run.ts: `tsx bench/create-or-send/server.ts <store url>`.
 * Prints `READY <port>`. The keyed order machine at /plain (create, PAYMENT by machine id) and
 * /keyed (PAYMENT by `createOrSend` on `orderNumber`).
 */
import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { keyedOrderMachine } from '../../fixtures/http/keyed-order-machine.js';
import { mountFastify } from '../../src/runtime/http/adapters/fastify.js';
import { MachineRouter } from '../../src/runtime/http/machine-router.js';
import { MachineRuntime } from '../../src/runtime/engine/machine-runtime.js';
import { openStore } from '../../src/runtime/persistence/open-store.js';

const store = await openStore(process.argv[2]!, { migrate: true });
const logger = {
  error: (message: string, meta: { error: unknown }) => console.error(message, meta.error),
};
const router = new MachineRouter({ runtime: new MachineRuntime({ store }), logger });
const only = ['PAYMENT'];
router.register(keyedOrderMachine, {
  prefix: 'plain',
  name: 'plain',
  create: true,
  only,
  machineIdFor: only,
});
router.register(keyedOrderMachine, {
  prefix: 'keyed',
  name: 'keyed',
  only,
  createOrSend: { key: 'orderNumber', events: only },
});
const app = Fastify({ logger: false });
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
