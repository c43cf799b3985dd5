/**
 * One compiled start of the example server (or with `bare`, of bare Fastify), stage by stage:
 * `npx tsx bench/startup/run.ts --stages` copies this file beside each checkout's compiled
 * example (bench/results/startup-js/generated-example/) and runs it. Prints one JSON line: each
 * stage's CPU time (process.cpuUsage, every thread) and the resident memory after it.
 */
const stages = [];
let before = process.cpuUsage();
const stage = (name) => {
  const now = process.cpuUsage();
  const cpuMs = (now.user - before.user + now.system - before.system) / 1000;
  stages.push([name, cpuMs, process.memoryUsage().rss / 1048576]);
  before = now;
};

const { default: Fastify } = await import('fastify');
stage('import fastify');
let close;
if (process.argv[2] === 'bare') {
  const app = Fastify();
  stage('Fastify()');
  app.post('/orders/create', async (_request, reply) => reply.code(201).send({ data: {} }));
  await app.listen({ port: 0, host: '127.0.0.1' });
  stage('listen');
  close = () => app.close();
} else {
  await import('zod');
  stage('import zod');
  await import('machine-routes/runtime');
  stage('import machine-routes/runtime');
  await import('machine-routes/fastify');
  stage('import machine-routes/fastify');
  await import('machine-routes/config');
  stage('import machine-routes/config');
  await import('../fixtures/example/machine-routes.config.js');
  stage('config and its machines');
  await import('./machines.gen.js');
  await import('./openapi.gen.js');
  const { buildApp } = await import('./app.gen.js');
  stage('generated modules');
  const app = await buildApp();
  stage('buildApp()');
  await app.listen(0);
  stage('listen');
  close = () => app.close();
}
process.stdout.write(`${JSON.stringify({ stages })}\n`);
await close();
