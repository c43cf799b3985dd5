/**
 * The server of bench/flow/run.ts: `tsx bench/flow/server.ts <store url>`. Prints
 * `READY <port>`. The counter machine registered four times on one store: /plain (no flow
 * control), /rate, /slots (limits never reached: their cost alone, keyed by the `x-tenant`
 * header), /fair (20 requests per second and 4 in flight per tenant: the flood case) and /open
 * (the same without flow control).
 */
import { counterMachine } from '../http/machines.js';
import { serveRouter } from '../router-server.js';

await serveRouter(
  (router) => {
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
  },
  (app) => {
    // The server's CPU time so far (user + system, us): a round's CPU per request, which the
    // shared host's load moves far less than its wall time.
    app.get('/__cpu', async () => {
      const { user, system } = process.cpuUsage();
      return { cpu: user + system };
    });
  },
);
