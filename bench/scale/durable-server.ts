/**
 * A server of bench/scale/dbos.ts, in a process of its own:
 * `durable-server.ts <mr|dbos-step|dbos-tx> <postgres url of its database>`. Prints
 * `READY <port> <pid>` once it listens; SIGTERM closes it (its connections end, which flushes
 * their row statistics).
 *
 * - `mr`: machine-routes' counter, machineId-bound INCREMENT (`POST /counters/{id}/increment`),
 *   and the hand-written one-transaction handler (`POST /hw/{id}/increment`) on the same pool.
 * - `dbos-step`: DBOS Transact, `POST /dbos/{id}/increment` runs a workflow whose one step
 *   (`DBOS.runStep`) updates the counter's row; DBOS checkpoints the step's output after it.
 * - `dbos-tx`: the same workflow with the step as a DBOS transaction
 *   (`@dbos-inc/postgres-datasource`): the update and its checkpoint in one transaction.
 */
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import pg from 'pg';
import { mountFastify } from '../../src/runtime/http/adapters/fastify.js';
import { MachineRouter } from '../../src/runtime/http/machine-router.js';
import { MachineRuntime } from '../../src/runtime/engine/machine-runtime.js';
import { openStore } from '../../src/runtime/persistence/open-store.js';
import type { PostgresStore } from '../../src/runtime/persistence/postgres-store.js';
import { handWrittenPostgres } from '../http/hand-written-postgres.js';
import { ulid } from '../http/hand-written-sqlite.js';
import { counterMachine, envelope, IncrementPayload } from '../http/machines.js';
import { importPeer } from '../peers.js';

const [mode, url] = process.argv.slice(2) as ['mr' | 'dbos-step' | 'dbos-tx', string];
const app = Fastify({ logger: false });
let close: () => Promise<void>;

async function machineRoutes(): Promise<void> {
  const store = (await openStore(url, { migrate: true })) as PostgresStore;
  const runtime = new MachineRuntime({ store });
  const router = new MachineRouter({ runtime, logger: { error: () => {} } });
  router.register(counterMachine, {
    prefix: 'counters',
    create: true,
    machineIdFor: ['INCREMENT'],
  });
  await handWrittenPostgres(app, store);
  await mountFastify(app, router);
  close = async () => {
    await app.close();
    await runtime.close();
  };
}

interface DbosModule {
  DBOS: {
    setConfig(config: Record<string, unknown>): void;
    launch(): Promise<void>;
    shutdown(): Promise<void>;
    registerWorkflow<A extends unknown[], R>(
      func: (...args: A) => Promise<R>,
      config: { name: string },
    ): (...args: A) => Promise<R>;
    runStep<R>(func: () => Promise<R>, config: { name: string }): Promise<R>;
  };
}
interface DataSourceModule {
  PostgresDataSource: {
    new (
      name: string,
      options: { host: string; port: number; database: string; user: string; max: number },
    ): {
      runTransaction<R>(func: () => Promise<R>, config: { name: string }): Promise<R>;
    };
    initializeDBOSSchema(options: Record<string, unknown>): Promise<void>;
    readonly client: (
      strings: TemplateStringsArray,
      ...values: unknown[]
    ) => Promise<{ count: number }[]>;
  };
}

/**
 * @dbos-inc/postgres-datasource's newest release (4.24.16) calls three schema helpers that
 * dbos-sdk 5 no longer exports (it migrates the same `transaction_completion` table itself):
 * they are put back, with the table's definition from dbos-sdk 5.3.0, so the data source runs
 * its transactions unchanged.
 */
async function shimDataSourceExports(): Promise<void> {
  const { createRequire } = await import('node:module');
  const { PEERS_DIRECTORY } = await import('../peers.js');
  const require = createRequire(`${PEERS_DIRECTORY}package.json`);
  const datasource = require('@dbos-inc/dbos-sdk/datasource') as Record<string, unknown>;
  const quote = (name: string) => `"${name.replaceAll('"', '""')}"`;
  datasource.checkSchemaInstallationPG ??= (schema: string) =>
    `SELECT EXISTS (SELECT 1 FROM information_schema.schemata WHERE schema_name = '${schema}') AS schema_exists,
       EXISTS (SELECT 1 FROM information_schema.tables WHERE table_schema = '${schema}'
         AND table_name = 'transaction_completion') AS table_exists`;
  datasource.createTransactionCompletionSchemaPG ??= (schema: string) =>
    `CREATE SCHEMA IF NOT EXISTS ${quote(schema)}`;
  datasource.createTransactionCompletionTablePG ??= (schema: string) =>
    `CREATE TABLE IF NOT EXISTS ${quote(schema)}.transaction_completion (
      workflow_id TEXT NOT NULL, function_num INT4 NOT NULL, output TEXT, error TEXT,
      created_at BIGINT NOT NULL DEFAULT (EXTRACT(EPOCH FROM now())*1000)::bigint,
      PRIMARY KEY (workflow_id, function_num))`;
}

async function dbos(transactional: boolean): Promise<void> {
  const { DBOS } = await importPeer<DbosModule>('@dbos-inc/dbos-sdk');
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  await pool.query(
    'CREATE TABLE IF NOT EXISTS dbos_counters (id TEXT PRIMARY KEY, status TEXT NOT NULL, count INTEGER NOT NULL)',
  );
  let update: (id: string, by: number) => Promise<number | null>;
  if (transactional) {
    await shimDataSourceExports();
    const { PostgresDataSource } = await importPeer<DataSourceModule>(
      '@dbos-inc/postgres-datasource',
    );
    const parsed = new URL(url);
    const options = {
      host: parsed.hostname,
      port: Number(parsed.port),
      database: parsed.pathname.slice(1),
      user: parsed.username,
      max: 10,
    };
    await PostgresDataSource.initializeDBOSSchema(options);
    const source = new PostgresDataSource('app', options);
    update = (id, by) =>
      source.runTransaction(
        async () => {
          const rows =
            await PostgresDataSource.client`UPDATE dbos_counters SET count = count + ${by}, status = 'active' WHERE id = ${id} RETURNING count`;
          return rows[0]?.count ?? null;
        },
        { name: 'increment' },
      );
  } else {
    update = (id, by) =>
      DBOS.runStep(
        async () => {
          const { rows } = await pool.query<{ count: number }>(
            "UPDATE dbos_counters SET count = count + $2, status = 'active' WHERE id = $1 RETURNING count",
            [id, by],
          );
          return rows[0]?.count ?? null;
        },
        { name: 'increment' },
      );
  }
  const increment = DBOS.registerWorkflow(async (id: string, by: number) => update(id, by), {
    name: 'incrementWorkflow',
  });
  DBOS.setConfig({
    name: 'bench',
    systemDatabaseUrl: url,
    systemDatabasePoolSize: 10,
    logLevel: 'error',
  });
  await DBOS.launch();
  app.post('/dbos/create', async (_request, reply) => {
    const id = ulid();
    await pool.query("INSERT INTO dbos_counters (id, status, count) VALUES ($1, 'active', 0)", [
      id,
    ]);
    return reply.code(201).send({ data: { id, state: ['counter.active'], output: { count: 0 } } });
  });
  app.post<{ Params: { id: string }; Body: { payload?: unknown } }>(
    '/dbos/:id/increment',
    async (request, reply) => {
      const parsed = IncrementPayload.safeParse(request.body?.payload);
      if (!parsed.success) return reply.code(422).send({ message: 'Invalid payload.' });
      const count = await increment(request.params.id, parsed.data.by);
      if (count === null) return reply.code(404).send({ message: 'Machine not found.' });
      return envelope(request.params.id, count);
    },
  );
  close = async () => {
    await app.close();
    await DBOS.shutdown();
    await pool.end();
  };
}

async function listen(server: FastifyInstance): Promise<void> {
  await server.listen({ host: '127.0.0.1', port: 0 });
  console.log(`READY ${(server.server.address() as AddressInfo).port} ${process.pid}`);
}

if (mode === 'mr') await machineRoutes();
else await dbos(mode === 'dbos-tx');
await listen(app);
process.on('SIGTERM', () => {
  void close().finally(() => process.exit(0));
});
