/**
 * One server of bench/scale/subscribers.ts: `node --expose-gc --import tsx
 * bench/scale/subscribers-server.ts <mr|raw> [store url]`. Prints `READY <port> <pid>`.
 * - mr:  machine-routes on Fastify, the bench counter with `stream: true`
 *        (GET /counters/{id}/events, POST /counters/create, POST /counters/{id}/increment).
 * - raw: Fastify alone holding SSE connections: GET /raw/{id}/events writes the headers, a retry
 *        hint and one state message and keeps the response (plus a 15 s keep-alive timer, as
 *        any SSE server needs); POST /raw/{id}/commit writes one message to each of them.
 * Both: GET /memory collects garbage twice and answers `process.memoryUsage()`; GET
 * /snapshot?to=<file> writes a heap snapshot there.
 */
import type { AddressInfo } from 'node:net';
import type { ServerResponse } from 'node:http';
import { writeHeapSnapshot } from 'node:v8';
import Fastify from 'fastify';
import { mountFastify } from '../../src/runtime/http/adapters/fastify.js';
import { MachineRouter } from '../../src/runtime/http/machine-router.js';
import { MachineRuntime } from '../../src/runtime/engine/machine-runtime.js';
import { openStore } from '../../src/runtime/persistence/open-store.js';
import { counterMachine, envelope } from '../http/machines.js';

const [kind, storeUrl] = process.argv.slice(2) as ['mr' | 'raw', string | undefined];
const collect = (globalThis as { gc?: () => void }).gc;
if (!collect) throw new Error('run with node --expose-gc');
const app = Fastify({ logger: false });
app.get('/memory', async () => {
  collect();
  collect();
  return process.memoryUsage();
});
// A heap snapshot for subscribers-heap.ts, into the file `?to=` names.
app.get<{ Querystring: { to: string } }>('/snapshot', async (request) => {
  collect();
  return { file: writeHeapSnapshot(request.query.to) };
});

if (kind === 'mr') {
  const store = await openStore(storeUrl!, { migrate: true });
  const router = new MachineRouter({
    runtime: new MachineRuntime({ store }),
    logger: { error: () => {} },
  });
  router.register(counterMachine, {
    prefix: 'counters',
    create: true,
    machineIdFor: ['INCREMENT'],
    reads: true,
    stream: true,
  });
  await mountFastify(app, router);
} else {
  const open = new Map<string, Set<ServerResponse>>();
  let sequence = 0;
  const message = (id: string) =>
    `id: ${sequence}\nevent: state\ndata: ${JSON.stringify(envelope(id, sequence))}\n\n`;
  app.get<{ Params: { id: string } }>('/raw/:id/events', (request, reply) => {
    reply.hijack();
    const response = reply.raw;
    response.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
    });
    response.write('retry: 1000\n\n');
    response.write(message(request.params.id));
    const set = open.get(request.params.id) ?? new Set();
    open.set(request.params.id, set);
    set.add(response);
    const heartbeat = setInterval(() => response.write(': keep-alive\n\n'), 15_000);
    heartbeat.unref();
    request.raw.socket.on('close', () => {
      clearInterval(heartbeat);
      set.delete(response);
    });
  });
  app.post<{ Params: { id: string } }>('/raw/:id/commit', async (request, reply) => {
    sequence += 1;
    const text = message(request.params.id);
    for (const response of open.get(request.params.id) ?? []) response.write(text);
    return reply.code(204).send();
  });
}
await app.listen({ host: '127.0.0.1', port: 0, backlog: 4096 });
process.stdout.write(`READY ${(app.server.address() as AddressInfo).port} ${process.pid}\n`);
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => process.exit(0));
