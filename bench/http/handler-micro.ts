/**
 * Micro-benchmark of the framework-neutral handlers, without HTTP:
 * `npx tsx bench/http/handler-micro.ts [--cpu-prof]`. Calls the stateless route's handler
 * (and the memory-store machineId-bound one) in a loop and prints microseconds per call, to
 * measure the lifecycle's own cost apart from the framework and the database.
 */
import { MachineRouter } from '../../src/runtime/http/machine-router.js';
import type { EndpointRequest } from '../../src/runtime/http/types.js';
import { MachineRuntime } from '../../src/runtime/engine/machine-runtime.js';
import { openStore } from '../../src/runtime/persistence/open-store.js';
import { counterMachine } from './machines.js';

const store = await openStore('memory:');
const runtime = new MachineRuntime({ store });
const router = new MachineRouter({ runtime, logger: { error: () => {} } });
router.register(counterMachine, { prefix: 'counters', create: true, machineIdFor: ['INCREMENT'] });
router.register(counterMachine, { prefix: 'quotes', name: 'quote' });
const handler = (name: string) =>
  router.routes.find((mounted) => mounted.route.name === name)!.handler;
const stateless = handler('quote.increment');
const bound = handler('counter.increment');
const { snapshot } = await runtime.create(counterMachine);

const request = (params: Record<string, string>): EndpointRequest => ({
  method: 'POST',
  params,
  query: {},
  body: { payload: { by: 1 } },
  headers: { 'content-type': 'application/json' },
});

async function measure(label: string, call: () => Promise<unknown>, count: number) {
  for (let index = 0; index < count / 10; index += 1) await call();
  const rounds: number[] = [];
  for (let round = 0; round < 5; round += 1) {
    const start = process.hrtime.bigint();
    for (let index = 0; index < count; index += 1) await call();
    rounds.push(Number(process.hrtime.bigint() - start) / 1000 / count);
  }
  rounds.sort((a, b) => a - b);
  console.log(`${label}: ${rounds[2]!.toFixed(2)} us per call (median of 5 x ${count})`);
}

await measure('stateless handler', () => stateless(request({})), 50_000);
await measure(
  'machineId-bound handler, memory store',
  () => bound(request({ machineId: snapshot.id })),
  20_000,
);
await runtime.close();
