/**
 * The server of bench/flow/run.ts: `tsx bench/flow/server.ts <store url>`. Prints
 * `READY <port>`. The counter machine registered four times on one store: /plain (no flow
 * control), /rate, /slots (limits never reached: their cost alone, keyed by the `x-tenant`
 * header), /fair (20 requests per second and 4 in flight per tenant: the flood case) and /open
 * (the same without flow control).
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
const key = { header: 'x-tenant' };
router.register(counterMachine, { ...base, prefix: 'plain', name: 'plain' });
router.register(counterMachine, {
  ...base,
  prefix: 'rate',
  name: 'rate',
  flow: { INCREMENT: { key, rate: { limit: 1_000_000, interval: 1000 } } },
});
router.register(counterMachine, {
  ...base,
  prefix: 'slots',
  name: 'slots',
  flow: { INCREMENT: { key, concurrency: 10_000 } },
});
router.register(counterMachine, {
  ...base,
  prefix: 'fair',
  name: 'fair',
  contention: { wait: 5000 },
  flow: { INCREMENT: { key, concurrency: 4, rate: { limit: 20, interval: 1000 } } },
});
// The flood case without flow control: what flow control spares the other tenant.
router.register(counterMachine, {
  ...base,
  prefix: 'open',
  name: 'open',
  contention: { wait: 5000 },
});
const app = Fastify({ logger: false });
// The server's CPU time so far (user + system, us): a round's CPU per request, which the
// shared host's load moves far less than its wall time.
app.get('/__cpu', async () => {
  const { user, system } = process.cpuUsage();
  return { cpu: user + system };
});
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
