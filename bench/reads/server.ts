/**
 * The server of the reads benchmark: `server.ts <store url>`. One Fastify app serving, for the
 * same instances, the machine-routes read (`GET /counters/{machineId}/status`) and a raw
 * Fastify route answering the very same JSON from memory (`GET /raw/{machineId}/status`).
 * Prints `READY <port> <ids...>`.
 */
import Fastify from 'fastify';
import type { AddressInfo } from 'node:net';
import { mountFastify } from '../../src/runtime/http/adapters/fastify.js';
import { MachineRouter } from '../../src/runtime/http/machine-router.js';
import { MachineRuntime } from '../../src/runtime/engine/machine-runtime.js';
import { counterMachine } from '../http/machines.js';

const INSTANCES = 500;

const runtime = await MachineRuntime.open({ databaseUrl: process.argv[2]!, worker: false });
const router = new MachineRouter({ runtime });
router.register(counterMachine, { prefix: 'counters', machineIdFor: ['INCREMENT'], reads: true });
const app = Fastify();
await mountFastify(app, router);

// The instances and, for the raw route, each one's read answer computed once.
const ids: string[] = [];
for (let index = 0; index < INSTANCES; index += 1) {
  ids.push((await runtime.create(counterMachine)).snapshot.id);
}
const answers = new Map<string, unknown>();
app.get<{ Params: { machineId: string } }>('/raw/:machineId/status', async (request, reply) => {
  const answer = answers.get(request.params.machineId);
  return answer === undefined ? reply.code(404).send({ message: 'Machine not found.' }) : answer;
});
for (const id of ids) {
  answers.set(id, (await app.inject({ method: 'GET', url: `/counters/${id}/status` })).json());
}
await app.listen({ host: '127.0.0.1', port: 0 });
const port = (app.server.address() as AddressInfo).port;
console.log(`READY ${port} ${ids.join(' ')}`);
// Exit normally on a signal, so `node --cpu-prof` writes its profile.
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => process.exit(0));
