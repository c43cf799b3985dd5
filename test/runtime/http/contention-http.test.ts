/**
 * The contention policy of event endpoints (`contention: 'reject' | { wait }`), over HTTP on a
 * listening server, on a SQLite file and on PostgreSQL: a burst of 50 concurrent sends on one
 * instance with `wait` commits all 50, gap-free and in order of arrival in one process; two
 * server processes sending bursts on one store commit every event once; a wait that runs out
 * answers 423 with the last committed state (a lock held in process, a slow transition in
 * another process); the default stays `reject` (423 at once).
 */
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ledgerMachine } from '../../../fixtures/http/ledger-machine.js';
import { defineMachine } from '../../../src/runtime/definition/define-machine.js';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import type { EventObject, MachineDefinition } from '../../../src/runtime/definition/index.js';
import { MachineRouter } from '../../../src/runtime/http/machine-router.js';
import { planRoutes } from '../../../src/runtime/http/plan-routes.js';
import type { RegistrationOptions } from '../../../src/runtime/http/types.js';
import type { SendOptions } from '../../../src/runtime/persistence/types.js';
import { startFixture, type FixtureProcess } from '../../support/child-process.js';
import { postgresBackend, sqliteFileBackend, type StoreBackend } from '../../support/stores.js';
import { useServerProcesses } from './support/server-processes.js';
import { send, startServer, type TestServer } from './support/servers.js';

const LEDGER_SERVER = fileURLToPath(new URL('./fixtures/ledger-server.ts', import.meta.url));
const SLOW_SERVER = fileURLToPath(new URL('../engine/fixtures/slow-server.ts', import.meta.url));

/** Waits long enough for any burst of this suite on a loaded machine. */
const PATIENT: RegistrationOptions = {
  prefix: 'ledgers',
  create: true,
  machineIdFor: ['NOTE', 'ADD', 'CLOSE', 'ARCHIVE', 'REOPEN'],
  reads: true,
  contention: { wait: 30_000 },
};
const STRICT: RegistrationOptions = {
  prefix: 'strict',
  name: 'strict',
  machineIdFor: ['NOTE'],
  only: ['NOTE'],
};
const BRIEF: RegistrationOptions = {
  prefix: 'brief',
  name: 'brief',
  machineIdFor: ['NOTE'],
  only: ['NOTE'],
  contention: { wait: 300 },
};
const BURST = 50;

const backends: StoreBackend[] = [sqliteFileBackend()];
const postgres = await postgresBackend('contention-http');
if (postgres) backends.push(postgres);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface LedgerEnvelope {
  data: {
    id: string;
    state: string[];
    output: { notes: number; seen: number[] };
    isProcessing: boolean;
  };
}

describe('contention option', () => {
  const waiting = defineMachine({
    config: {
      id: 'queue',
      initial: 'open',
      states: { open: { on: { PUSH: {}, POKE: {}, PEEK: {} } } },
    },
    endpoints: [
      { PUSH: { contention: { wait: 2000 } } },
      { POKE: { contention: 'reject' } },
      { PEEK: { method: 'GET' } },
    ],
  });

  it('should plan the wait on routes sending to an instance: the endpoint first, else the registration', () => {
    const own = planRoutes(waiting, {
      prefix: 'queues',
      create: true,
      machineIdFor: ['PUSH', 'POKE', 'PEEK'],
      reads: true,
    });
    expect(Object.fromEntries(own.map((route) => [route.name, route.contention]))).toEqual({
      'queue.create': undefined,
      'queue.push': { waitMs: 2000 },
      'queue.poke': undefined,
      'queue.peek': undefined,
      'queue.read.status': undefined,
    });
    const defaulted = planRoutes(waiting, {
      prefix: 'queues',
      machineIdFor: ['PUSH', 'POKE', 'PEEK'],
      contention: { wait: 500 },
    });
    expect(defaulted.map((route) => route.contention)).toEqual([
      { waitMs: 2000 },
      undefined,
      { waitMs: 500 },
    ]);
    // Stateless routes have no instance to wait for.
    expect(
      planRoutes(waiting, { prefix: 'queues', contention: { wait: 500 } }).map(
        (route) => route.contention,
      ),
    ).toEqual([undefined, undefined, undefined]);
  });

  it('should refuse bad registration values naming the key, the machine and the fix', () => {
    const plan = (contention: unknown) => () =>
      planRoutes(waiting, {
        prefix: 'queues',
        machineIdFor: ['PUSH'],
        contention: contention as RegistrationOptions['contention'],
      });
    expect(plan('wait')).toThrow(
      /'contention' must be 'reject' or \{ wait: 5000 \} \(milliseconds, 1 to 60000\), got 'wait'\. \(machine 'queue', registration 'queue'\)/,
    );
    expect(plan({ wait: 0 })).toThrow(/'contention' must be .*; 'wait' got 0/);
    expect(plan({ wait: 60_001 })).toThrow(/'wait' got 60001/);
    expect(plan({ wait: 1.5 })).toThrow(/'wait' got 1.5/);
    // JSON.stringify spells both null: the message names the value that was given.
    expect(plan({ wait: Number.NaN })).toThrow(/'wait' got NaN\./);
    expect(plan({ wait: Number.POSITIVE_INFINITY })).toThrow(/'wait' got Infinity\./);
    expect(plan({ wait: 5n })).toThrow(/'wait' got 5n\./);
    expect(plan({ wiat: 100 })).toThrow(/'contention' has unknown key 'wiat'/);
  });

  it('should refuse bad endpoint values at definition time', () => {
    expect(() =>
      defineMachine({
        config: { id: 'bad', initial: 'a', states: { a: { on: { GO: {} } } } },
        endpoints: [{ GO: { contention: { wait: -5 } } }],
      }),
    ).toThrow(/Endpoint `GO` of machine 'bad': 'contention' must be 'reject' or \{ wait: 5000 \}/);
  });
});

describe.each(backends)('contention policy over HTTP on $name', (backend) => {
  let runtime: MachineRuntime;
  let server: TestServer;
  /** `n` of every NOTE handed to the runtime, in the order the requests reached it. */
  const arrivals = new Map<string, number[]>();

  beforeAll(async () => {
    await backend.setUp();
    runtime = await MachineRuntime.open({
      databaseUrl: backend.url(),
      migrate: true,
      worker: false,
    });
    // The order requests reach `send` is the order they queue for the lock (the queue is
    // entered synchronously in the call).
    const sendNow = runtime.send.bind(runtime);
    runtime.send = (
      definition: MachineDefinition,
      id: string,
      event: EventObject,
      options?: SendOptions,
    ) => {
      const seen = arrivals.get(id) ?? [];
      seen.push(Number(event.payload?.['n']));
      arrivals.set(id, seen);
      return sendNow(definition, id, event, options);
    };
    const router = new MachineRouter({ runtime });
    router.register(ledgerMachine, PATIENT);
    router.register(ledgerMachine, STRICT);
    router.register(ledgerMachine, BRIEF);
    server = await startServer('fastify', [router], { error: () => {} });
  }, 60_000);
  afterAll(async () => {
    await server?.close();
    await runtime?.close();
    await backend.tearDown();
  });

  const create = async (): Promise<string> => {
    const created = await send(server.url, 'POST', '/ledgers/create');
    expect(created.status).toBe(201);
    return (created.body as LedgerEnvelope).data.id;
  };
  const note = (prefix: string, id: string, n: number) =>
    send(server.url, 'POST', `/${prefix}/${id}/note`, { body: { payload: { n } } });

  it(`should commit all ${BURST} of a concurrent burst, gap-free and in order of arrival`, async () => {
    const id = await create();
    const answers = await Promise.all(
      Array.from({ length: BURST }, (_, index) => note('ledgers', id, index + 1)),
    );
    expect(answers.map((answer) => answer.status)).toEqual(Array(BURST).fill(200));
    const { context } = (await runtime.store.load(id))!;
    expect(context['notes']).toBe(BURST);
    expect(context['seen']).toEqual(arrivals.get(id));
    expect([...(context['seen'] as number[])].sort((a, b) => a - b)).toEqual(
      Array.from({ length: BURST }, (_, index) => index + 1),
    );
    const history = await runtime.store.history(id);
    expect(history.map((record) => record.sequence)).toEqual(
      Array.from({ length: history.length }, (_, index) => index + 1),
    );
    expect(
      history.filter((record) => record.type === 'NOTE').map((record) => record.payload?.['n']),
    ).toEqual(arrivals.get(id));
    // Each answer is the state right after its own event.
    const counts = answers.map((answer) => (answer.body as LedgerEnvelope).data.output.notes);
    expect([...counts].sort((a, b) => a - b)).toEqual(
      Array.from({ length: BURST }, (_, index) => index + 1),
    );
  }, 120_000);

  it('should keep rejecting at once by default: 423 with the last committed state', async () => {
    const id = await create();
    expect((await note('ledgers', id, 1)).status).toBe(200);
    let refused: Awaited<ReturnType<typeof note>> | undefined;
    await runtime.withLock(id, async () => {
      refused = await note('strict', id, 2);
    });
    expect(refused!.status).toBe(423);
    expect((refused!.body as LedgerEnvelope).data).toMatchObject({
      id,
      output: { notes: 1, seen: [1] },
      isProcessing: true,
    });
    expect((await runtime.store.load(id))!.context).toMatchObject({ notes: 1, seen: [1] });
  });

  it('should answer 423 with the last committed state once the wait runs out', async () => {
    const id = await create();
    expect((await note('ledgers', id, 1)).status).toBe(200);
    let refused: Awaited<ReturnType<typeof note>> | undefined;
    let took = 0;
    await runtime.withLock(id, async () => {
      const started = performance.now();
      refused = await note('brief', id, 2);
      took = performance.now() - started;
    });
    expect(refused!.status).toBe(423);
    expect((refused!.body as LedgerEnvelope).data).toMatchObject({
      output: { notes: 1, seen: [1] },
      isProcessing: true,
    });
    // It did wait (the bound is 300 ms; only a lower bound is asserted).
    expect(took).toBeGreaterThanOrEqual(250);
    expect((await runtime.store.load(id))!.context).toMatchObject({ notes: 1, seen: [1] });
  });

  it('should answer normally when the lock is released within the wait', async () => {
    const id = await create();
    let pending: Promise<Awaited<ReturnType<typeof note>>> | undefined;
    await runtime.withLock(id, async () => {
      pending = note('ledgers', id, 7);
      await sleep(200);
      expect((await runtime.store.load(id))!.context).toMatchObject({ notes: 0 });
    });
    const answer = await pending!;
    expect(answer.status).toBe(200);
    expect((answer.body as LedgerEnvelope).data.output).toMatchObject({ notes: 1, seen: [7] });
  });
});

describe.each(backends)('contention policy across two server processes on $name', (backend) => {
  const processes = useServerProcesses(backend, LEDGER_SERVER, [JSON.stringify(PATIENT)]);
  const { urls } = processes;

  it('should commit every event of bursts sent to both processes at once, each once', async () => {
    const [one, two] = urls as [string, string];
    const created = await send(one, 'POST', '/ledgers/create');
    const id = (created.body as LedgerEnvelope).data.id;
    const answers = await Promise.all(
      Array.from({ length: BURST }, (_, index) =>
        send(index % 2 === 0 ? one : two, 'POST', `/ledgers/${id}/note`, {
          body: { payload: { n: index + 1 } },
        }),
      ),
    );
    expect(answers.map((answer) => answer.status)).toEqual(Array(BURST).fill(200));
    const { context } = (await processes.runtime.store.load(id))!;
    expect(context['notes']).toBe(BURST);
    expect([...(context['seen'] as number[])].sort((a, b) => a - b)).toEqual(
      Array.from({ length: BURST }, (_, index) => index + 1),
    );
    const history = await processes.runtime.store.history(id);
    expect(history.map((record) => record.sequence)).toEqual(
      Array.from({ length: history.length }, (_, index) => index + 1),
    );
    // Within each process, requests kept their relative order only as far as they reached the
    // server in it; across processes no order is promised. Every event is there once.
    expect(history.filter((record) => record.type === 'NOTE')).toHaveLength(BURST);
  }, 180_000);
});

describe.each(backends)(
  'a waiting request and a slow transition in another process ($name)',
  (backend) => {
    const servers: FixtureProcess[] = [];
    const bases: string[] = [];

    beforeAll(async () => {
      await backend.setUp();
      for (let index = 0; index < 2; index += 1) {
        const server = startFixture(SLOW_SERVER, ['--url', backend.url()]);
        servers.push(server);
        const ready = await server.waitForLine((line) => line.startsWith('READY '), 45_000);
        bases.push(`http://127.0.0.1:${ready.slice('READY '.length)}`);
      }
    }, 120_000);
    afterAll(async () => {
      for (const server of servers) server.child.kill('SIGTERM');
      await Promise.all(servers.map((server) => server.exited));
      await backend.tearDown();
    });

    const call = async (base: string, path: string, body?: unknown, method = 'POST') => {
      const response = await fetch(`${base}${path}`, {
        method,
        ...(body === undefined
          ? {}
          : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
      });
      return {
        status: response.status,
        body: (await response.json()) as {
          data: { id: string; output: { count: number }; isProcessing: boolean };
        },
      };
    };

    it('should answer 423 (GET 200) with the last committed state past the wait, and 200 after the transition within it', async () => {
      const [a, b] = bases as [string, string];
      const x = (await call(a, '/slow/create')).body.data.id;
      expect((await call(a, `/slow/${x}/inc`)).body.data.output).toEqual({ count: 1 });
      const slow = call(a, `/slow/${x}/slow`, { payload: { ms: 3000 } });
      await servers[0]!.waitForLine((line) => line === 'SLOW');
      // `hasty` waits 300 ms, `patient` 30 s (slow-server.ts).
      const patient = call(b, `/patient/${x}/inc`);
      const hasty = await call(b, `/hasty/${x}/inc`);
      expect(hasty.status).toBe(423);
      expect(hasty.body.data).toMatchObject({ id: x, output: { count: 1 }, isProcessing: true });
      // A GET event route answers the same past its wait with 200.
      const peek = await call(b, `/hasty/${x}/peek`, undefined, 'GET');
      expect(peek.status).toBe(200);
      expect(peek.body.data).toMatchObject({ id: x, output: { count: 1 }, isProcessing: true });
      expect((await slow).status).toBe(200);
      const waited = await patient;
      expect(waited.status).toBe(200);
      expect(waited.body.data.output).toEqual({ count: 3 });
    }, 120_000);
  },
);
