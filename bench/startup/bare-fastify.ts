/**
 * The baseline of bench/startup: bare Fastify with one JSON route, started the way the generated
 * `server.gen.ts` starts (PORT, HOST, one `listening on` line).
 */
import Fastify from 'fastify';

async function main(): Promise<void> {
  const app = Fastify();
  app.post('/orders/create', async (_request, reply) => reply.code(201).send({ data: {} }));
  const url = await app.listen({
    port: Number(process.env['PORT'] ?? 3000),
    host: process.env['HOST'] ?? '127.0.0.1',
  });
  console.log(`bare fastify: listening on ${url}`);
}

void main();
