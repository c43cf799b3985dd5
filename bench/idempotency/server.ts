/**
 * The server of bench/idempotency/run.ts: `tsx bench/idempotency/server.ts <store url>`.
 * Prints `READY <port>`. The counter machine at /plain (no idempotency) and /idem
 * (`idempotency: true`).
 */
import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { mountFastify } from '../../src/runtime/http/adapters/fastify.js';
import { MachineRouter } from '../../src/runtime/http/machine-router.js';
import { MachineRuntime } from '../../src/runtime/engine/machine-runtime.js';
import { openStore } from '../../src/runtime/persistence/open-store.js';
import { counterMachine } from '../http/machines.js';

const store = await openStore(process.argv[2]!, { migrate: true });
const logger = {
  error: (message: string, meta: { error: unknown }) => console.error(message, meta.error),
};
const router = new MachineRouter({ runtime: new MachineRuntime({ store }), logger });
const base = { create: true, machineIdFor: ['INCREMENT'] };
router.register(counterMachine, { ...base, prefix: 'plain', name: 'plain' });
router.register(counterMachine, { ...base, prefix: 'idem', name: 'idem', idempotency: true });
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
