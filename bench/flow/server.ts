/**
 * The server of bench/flow/run.ts: `tsx bench/flow/server.ts <store url>`. Prints
 * `READY <port>`. The counter machine registered four times on one store: /plain (no flow
 * control), /rate, /slots (limits never reached: their cost alone, keyed by the `x-tenant`
 * header), /fair (20 requests per second and 4 in flight per tenant: the flood case) and /open
 * (the same without flow control).
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { PostgresStore } from '../../src/runtime/persistence/postgres-store.js';
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
  (app, store) => {
    // Where a request's time goes under a flood (fairness.ts): how late this process's event
    // loop ran its callbacks, and how many queries waited for a PostgreSQL pool connection.
    const loopDelay = monitorEventLoopDelay({ resolution: 10 });
    loopDelay.enable();
    const pool = store instanceof PostgresStore ? store.pool : null;
    let poolWaitingMax = 0;
    if (pool !== null)
      setInterval(() => (poolWaitingMax = Math.max(poolWaitingMax, pool.waitingCount)), 5).unref();
    // The server's CPU time so far (user + system, us): a round's CPU per request, which the
    // shared host's load moves far less than its wall time. The loop delay and pool figures
    // are since the last read.
    app.get('/__cpu', async () => {
      const { user, system } = process.cpuUsage();
      const answer = {
        cpu: user + system,
        loopP99Ms: loopDelay.percentile(99) / 1e6,
        poolWaitingMax,
        poolSize: pool?.totalCount ?? null,
      };
      loopDelay.reset();
      poolWaitingMax = 0;
      return answer;
    });
  },
);
