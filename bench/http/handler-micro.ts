/**
 * Micro-benchmark of the framework-neutral handlers, without HTTP:
 * `npx tsx bench/http/handler-micro.ts [--cpu-prof]`. Calls the stateless route's handler
 * (and the memory-store machineId-bound and read ones) in a loop and prints CPU microseconds
 * per call, to measure the lifecycle's own cost apart from the framework and the database.
 */
import { MachineRouter } from '../../src/runtime/http/machine-router.js';
import type { EndpointRequest } from '../../src/runtime/http/types.js';
import { MachineRuntime } from '../../src/runtime/engine/machine-runtime.js';
import { openStore } from '../../src/runtime/persistence/open-store.js';
import { counterMachine } from './machines.js';

const store = await openStore('memory:');
const runtime = new MachineRuntime({ store });
const router = new MachineRouter({ runtime, logger: { error: () => {} } });
router.register(counterMachine, {
  prefix: 'counters',
  create: true,
  machineIdFor: ['INCREMENT'],
  reads: true,
});
router.register(counterMachine, { prefix: 'quotes', name: 'quote' });
const handler = (name: string) =>
  router.routes.find((mounted) => mounted.route.name === name)!.handler;
const stateless = handler('quote.increment');
const bound = handler('counter.increment');
const read = router.routes.find(
  (mounted) => mounted.route.method === 'GET' && mounted.route.handler === 'read',
)!.handler;
const { snapshot } = await runtime.create(counterMachine);

const request = (params: Record<string, string>, method = 'POST'): EndpointRequest => ({
  method,
  params,
  query: {},
  body: { payload: { by: 1 } },
  headers: { 'content-type': 'application/json' },
});

// CPU time of this process (user + system), not wall-clock: on a shared machine the process
// waits for a core a good part of the time, which wall-clock would count as the handler's.
async function measure(label: string, call: () => Promise<unknown>, count: number) {
  for (let index = 0; index < count / 10; index += 1) await call();
  const rounds: number[] = [];
  for (let round = 0; round < 5; round += 1) {
    const start = process.cpuUsage();
    for (let index = 0; index < count; index += 1) await call();
    const used = process.cpuUsage(start);
    rounds.push((used.user + used.system) / count);
  }
  rounds.sort((a, b) => a - b);
  console.log(`${label}: ${rounds[2]!.toFixed(2)} us CPU per call (median of 5 x ${count})`);
}

await measure('stateless handler', () => stateless(request({})), 50_000);
await measure(
  'machineId-bound handler, memory store',
  () => bound(request({ machineId: snapshot.id })),
  20_000,
);
await measure(
  'read handler, memory store',
  () => read(request({ machineId: snapshot.id }, 'GET')),
  50_000,
);
await runtime.close();
