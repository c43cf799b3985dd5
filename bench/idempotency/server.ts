/**
 * The server of bench/idempotency/run.ts: `tsx bench/idempotency/server.ts <store url>`.
 * Prints `READY <port>`. The counter machine at /plain (no idempotency) and /idem
 * (`idempotency: true`).
 */
import { counterMachine } from '../http/machines.js';
import { serveRouter } from '../router-server.js';

await serveRouter((router) => {
  const base = { create: true, machineIdFor: ['INCREMENT'] };
  router.register(counterMachine, { ...base, prefix: 'plain', name: 'plain' });
  router.register(counterMachine, { ...base, prefix: 'idem', name: 'idem', idempotency: true });
});
