/**
 * The instance lifecycle on every backend, with real machines from defineMachine.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { ulid } from 'ulid';
import { defineMachine } from '../../../src/runtime/definition/index.js';
import { transition } from '../../../src/runtime/interpreter/index.js';
import {
  InvalidSettingsException,
  MachineAlreadyRunningException,
  MachineNotFoundException,
  MachineValidationException,
  NoTransitionDefinitionFoundException,
  StoreNotMigratedException,
  StoreUnreachableException,
} from '../../../src/runtime/errors.js';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import { startWorker } from '../../../src/runtime/engine/worker.js';
import type { Store } from '../../../src/runtime/persistence/store.js';
import { migrate, openStore } from '../../../src/runtime/persistence/open-store.js';
import {
  createTestSchema,
  dropSchema,
  PG_TEST_URL,
  shouldRunPostgresTests,
} from '../../support/postgres.js';
import { allBackends, makeStep } from '../../support/stores.js';
import { counterMachine, ephemeralMachine } from './fixtures/machines.js';

const backends = await allBackends('runtime');

describe.each(backends)('MachineRuntime ($name)', (backend) => {
  let store: Store;
  let runtime: MachineRuntime;

  beforeAll(() => backend.setUp());
  afterAll(() => backend.tearDown());
  beforeEach(async () => {
    store = await backend.open();
    runtime = new MachineRuntime({ store });
  });
  afterEach(() => runtime.close());

  describe('create', () => {
    it('should persist the initial state; its id is the root event id', async () => {
      const { snapshot, history } = await runtime.create(counterMachine);
      expect(snapshot).toMatchObject({
        machineId: 'counter',
        value: ['counter.counting'],
        context: { count: 0 },
      });
      expect(history[0]!.id).toBe(snapshot.id);
      expect(await runtime.restore(counterMachine, snapshot.id)).toEqual(snapshot);
      expect(await store.history(snapshot.id)).toEqual(history);
      expect((await store.currentStates(snapshot.id)).map((row) => row.stateId)).toEqual([
        'counter.counting',
      ]);
    });

    it('should persist a machine that opts out of persistence', async () => {
      const { snapshot } = await runtime.create(ephemeralMachine);
      expect(await runtime.restore(ephemeralMachine, snapshot.id)).toEqual(snapshot);
    });
  });

  describe('restore', () => {
    it.each(['', 'not-a-ulid', '01ARZ3NDEKTSV4RRFFQ69G5FA!', '81ARZ3NDEKTSV4RRFFQ69G5FAV'])(
      'should answer MachineNotFoundException for the malformed id %j without querying',
      async (id) => {
        const load = vi.spyOn(store, 'load');
        await expect(runtime.restore(counterMachine, id)).rejects.toBeInstanceOf(
          MachineNotFoundException,
        );
        expect(load).not.toHaveBeenCalled();
      },
    );

    it("should answer MachineNotFoundException for an unknown id and for another machine's id", async () => {
      await expect(runtime.restore(counterMachine, ulid())).rejects.toBeInstanceOf(
        MachineNotFoundException,
      );
      const { snapshot } = await runtime.create(ephemeralMachine);
      const error = await runtime.restore(counterMachine, snapshot.id).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(MachineNotFoundException);
      expect((error as MachineNotFoundException).statusCode).toBe(404);
    });

    it('should read the current snapshot, never the history', async () => {
      const { snapshot } = await runtime.create(counterMachine);
      await runtime.send(counterMachine, snapshot.id, { type: 'INC' });
      const history = vi.spyOn(store, 'history');
      expect((await runtime.restore(counterMachine, snapshot.id)).context.count).toBe(1);
      expect(history).not.toHaveBeenCalled();
    });
  });

  describe('send', () => {
    it('should run the macrostep, persist it and release the lock', async () => {
      const { snapshot: created } = await runtime.create(counterMachine);
      const { snapshot, history } = await runtime.send(counterMachine, created.id, {
        type: 'INC',
        actor: 'user-1',
      });
      expect(snapshot).toMatchObject({ context: { count: 1 }, value: ['counter.counting'] });
      expect(history[0]).toMatchObject({
        type: 'INC',
        source: 'external',
        sequence: created.sequence + 1,
      });
      expect(await runtime.restore(counterMachine, created.id)).toEqual(snapshot);
      const stored = await store.history(created.id);
      expect(stored.slice(created.sequence)).toEqual(history);
      expect(await store.readLock(created.id)).toBeNull();
    });

    it('should move current states and keep the instance findable by state', async () => {
      const { snapshot: created } = await runtime.create(counterMachine);
      const inCounting = await runtime.findInstancesInState(counterMachine, 'counting', {
        limit: 1000,
      });
      expect(inCounting.map((row) => row.rootEventId)).toContain(created.id);
      const { snapshot } = await runtime.send(counterMachine, created.id, { type: 'STOP' });
      expect(snapshot).toMatchObject({ value: ['counter.stopped'], status: 'done' });
      expect((await store.currentStates(created.id)).map((row) => row.stateId)).toEqual([
        'counter.stopped',
      ]);
      const stopped = await runtime.findInstancesInState(counterMachine, 'counter.stopped', {
        limit: 1000,
      });
      expect(stopped.map((row) => row.rootEventId)).toContain(created.id);
    });

    it('should refuse with MachineAlreadyRunningException carrying the last committed snapshot while the lock is held', async () => {
      const { snapshot: created } = await runtime.create(counterMachine);
      const owner = ulid();
      expect(
        await store.tryAcquireLock({ rootEventId: created.id, ownerId: owner, ttlMs: 60_000 }),
      ).toBe(true);
      const error = await runtime
        .send(counterMachine, created.id, { type: 'INC' })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(MachineAlreadyRunningException);
      expect((error as MachineAlreadyRunningException).snapshot).toEqual(created);
      expect(await store.history(created.id)).toHaveLength(created.sequence);
      expect((await store.readLock(created.id))?.ownerId).toBe(owner);
      await store.releaseLock(created.id, owner);
    });

    it('should take over a lock whose holder died once it expired', async () => {
      const { snapshot: created } = await runtime.create(counterMachine);
      await store.tryAcquireLock({ rootEventId: created.id, ownerId: ulid(), ttlMs: 30 });
      await new Promise((resolve) => setTimeout(resolve, 60));
      const { snapshot } = await runtime.send(counterMachine, created.id, { type: 'INC' });
      expect(snapshot.context.count).toBe(1);
    });

    it('should write nothing and release the lock when no transition accepts the event', async () => {
      const { snapshot: created } = await runtime.create(counterMachine);
      await expect(
        runtime.send(counterMachine, created.id, { type: 'NOPE' }),
      ).rejects.toBeInstanceOf(NoTransitionDefinitionFoundException);
      expect(await store.history(created.id)).toHaveLength(created.sequence);
      expect(await store.readLock(created.id)).toBeNull();
      expect(await runtime.restore(counterMachine, created.id)).toEqual(created);
    });

    it('should persist the history of a failed validation guard, keep the state, then throw', async () => {
      const { snapshot: created } = await runtime.create(counterMachine);
      const error = await runtime
        .send(counterMachine, created.id, { type: 'ADD', payload: { amount: -1 } })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(MachineValidationException);
      expect((error as MachineValidationException).errors).toEqual({
        'payload.amount': ['Amount must be positive'],
      });
      const restored = await runtime.restore(counterMachine, created.id);
      expect(restored).toMatchObject({ value: created.value, context: created.context });
      const history = await store.history(created.id);
      expect(history.length).toBeGreaterThan(created.sequence);
      expect(history[created.sequence]).toMatchObject({ type: 'ADD', source: 'external' });
      expect(restored.sequence).toBe(history.length);
      expect(await store.readLock(created.id)).toBeNull();
    });

    it('should answer MachineNotFoundException for unknown and foreign ids', async () => {
      await expect(runtime.send(counterMachine, ulid(), { type: 'INC' })).rejects.toBeInstanceOf(
        MachineNotFoundException,
      );
      await expect(runtime.send(counterMachine, 'nope', { type: 'INC' })).rejects.toBeInstanceOf(
        MachineNotFoundException,
      );
      const { snapshot } = await runtime.create(ephemeralMachine);
      await expect(
        runtime.send(counterMachine, snapshot.id, { type: 'INC' }),
      ).rejects.toBeInstanceOf(MachineNotFoundException);
    });

    it('should not persist sends to a machine that opts out of persistence', async () => {
      const { snapshot: created } = await runtime.create(ephemeralMachine);
      const { snapshot } = await runtime.send(ephemeralMachine, created.id, { type: 'INC' });
      expect(snapshot.context.count).toBe(1);
      expect(await runtime.restore(ephemeralMachine, created.id)).toEqual(created);
      expect(await store.history(created.id)).toHaveLength(created.sequence);
    });

    it('should be fenced out when its lock expired and another writer committed first', async () => {
      const { snapshot: created } = await runtime.create(counterMachine);
      const commit = store.commit.bind(store);
      // An intruder that took over the expired lock commits between our load and our commit.
      const intruder = makeStep({
        machineId: 'counter',
        from: created,
        value: created.value,
        context: { count: 41 },
      });
      vi.spyOn(store, 'commit').mockImplementationOnce(async (request) => {
        await commit(intruder);
        return commit(request);
      });
      const error = await runtime
        .send(counterMachine, created.id, { type: 'INC' })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(MachineAlreadyRunningException);
      expect((error as MachineAlreadyRunningException).snapshot).toEqual(intruder.snapshot);
      expect((await store.history(created.id)).slice(created.sequence)).toEqual(intruder.history);
      expect(await store.readLock(created.id)).toBeNull();
    });
  });

  describe('sendStateless', () => {
    it('should initialize and apply the event in memory, persisting nothing', async () => {
      const commit = vi.spyOn(store, 'commit');
      const { snapshot, history } = await runtime.sendStateless(counterMachine, { type: 'INC' });
      expect(snapshot.context.count).toBe(1);
      expect(history[0]!.id).toBe(snapshot.id);
      expect(commit).not.toHaveBeenCalled();
      await expect(runtime.restore(counterMachine, snapshot.id)).rejects.toBeInstanceOf(
        MachineNotFoundException,
      );
    });

    it('should build no history records with keepHistory false, and reach the same state', async () => {
      const kept = await runtime.sendStateless(counterMachine, { type: 'INC' });
      const light = await runtime.sendStateless(
        counterMachine,
        { type: 'INC' },
        { keepHistory: false },
      );
      expect(light.history).toEqual([]);
      expect(light.snapshot).toEqual({ ...kept.snapshot, id: light.snapshot.id });
      expect(light.snapshot.sequence).toBe(kept.history.length);
    });
  });

  describe('withLock', () => {
    it('should send through the locked instance, and refuse sends from elsewhere meanwhile', async () => {
      const { snapshot: created } = await runtime.create(counterMachine);
      let leaked: ((definition: typeof counterMachine) => Promise<unknown>) | undefined;
      const result = await runtime.withLock(created.id, async (instance) => {
        expect(await store.readLock(created.id)).toMatchObject({ context: 'job' });
        await expect(
          runtime.send(counterMachine, created.id, { type: 'INC' }),
        ).rejects.toBeInstanceOf(MachineAlreadyRunningException);
        const { snapshot } = await instance.send(counterMachine, { type: 'INC' });
        expect(await instance.restore(counterMachine)).toEqual(snapshot);
        leaked = (definition) => instance.send(definition, { type: 'INC' });
        return snapshot.context.count;
      });
      expect(result).toBe(1);
      expect(await store.readLock(created.id)).toBeNull();
      // The handle is dead once the lock is released.
      await expect(leaked!(counterMachine)).rejects.toThrow(/released/);
      expect((await runtime.restore(counterMachine, created.id)).context.count).toBe(1);
    });

    it('should release the lock when the callback throws', async () => {
      const { snapshot: created } = await runtime.create(counterMachine);
      await expect(
        runtime.withLock(created.id, async () => {
          throw new Error('job failed');
        }),
      ).rejects.toThrow('job failed');
      expect(await store.readLock(created.id)).toBeNull();
    });

    it('should wait for a busy lock and time out with MachineAlreadyRunningException', async () => {
      const { snapshot: created } = await runtime.create(counterMachine);
      const owner = ulid();
      await store.tryAcquireLock({ rootEventId: created.id, ownerId: owner, ttlMs: 60_000 });
      const timedOut = await runtime
        .withLock(created.id, async () => 'ran', { timeoutMs: 80 })
        .catch((e: unknown) => e);
      expect(timedOut).toBeInstanceOf(MachineAlreadyRunningException);
      expect((timedOut as Error).message).toContain(owner);
      setTimeout(() => void store.releaseLock(created.id, owner), 50);
      expect(await runtime.withLock(created.id, async () => 'ran', { timeoutMs: 5_000 })).toBe(
        'ran',
      );
      expect(await store.readLock(created.id)).toBeNull();
    });
  });
});

const runPostgres = await shouldRunPostgresTests('machine-runtime.test.ts');

describe('MachineRuntime.open', () => {
  it('should open the configured store, migrated, and apply the transition depth default', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mr-runtime-open-'));
    const loop = defineMachine({
      config: {
        id: 'loop',
        initial: 'idle',
        states: {
          idle: { on: { GO: 'ping' } },
          ping: { on: { '@always': 'pong' } },
          pong: { on: { '@always': 'ping' } },
        },
      },
    });
    try {
      const runtime = await MachineRuntime.open({
        env: {
          MACHINE_DATABASE_URL: `sqlite:${join(dir, 'machines.db')}`,
          MACHINE_MAX_TRANSITION_DEPTH: '42',
        },
      });
      expect(runtime.store.kind).toBe('sqlite');
      const { snapshot } = await runtime.create(counterMachine);
      expect(await runtime.restore(counterMachine, snapshot.id)).toEqual(snapshot);
      const looping = await runtime.create(loop);
      await expect(runtime.send(loop, looping.snapshot.id, { type: 'GO' })).rejects.toThrow(
        'maximum transition depth of 42 exceeded',
      );
      // The setting belongs to the runtime: the interpreter's own default is unchanged.
      expect(() => transition(loop, looping.snapshot, 'GO')).toThrow(
        'maximum transition depth of 100 exceeded',
      );
      await runtime.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.runIf(runPostgres)(
    'should name what to change when the PostgreSQL server or database cannot be used',
    async () => {
      const missing = new URL(PG_TEST_URL);
      missing.pathname = `/mr_missing_${ulid().toLowerCase()}`;
      missing.password = 'secret';
      // No server listens on port 1 of the loopback interface.
      const closed = new URL(PG_TEST_URL);
      closed.port = '1';
      for (const [url, hint] of [
        [missing.toString(), `does not exist on 127.0.0.1:5432: create it (createdb`],
        [closed.toString(), 'no PostgreSQL server answered at 127.0.0.1:1'],
      ] as const) {
        // Started one at a time: a rejection not yet awaited is an unhandled one.
        for (const attempt of [
          () => MachineRuntime.open({ databaseUrl: url, worker: false }),
          () => migrate(url),
          () => openStore(url, { migrate: true }),
        ]) {
          const error = await attempt().then(
            () => undefined,
            (failure: unknown) => failure,
          );
          expect(error).toBeInstanceOf(StoreUnreachableException);
          expect((error as StoreUnreachableException).code).toBe('MR_STORE_UNREACHABLE');
          expect((error as Error).message).toContain(hint);
          expect((error as Error).message).not.toContain('secret');
        }
      }
    },
  );

  it.runIf(runPostgres)(
    'should refuse an unmigrated PostgreSQL schema, naming the command, and open once migrated',
    async () => {
      const schema = await createTestSchema('runtime_open');
      try {
        const refused = MachineRuntime.open({ databaseUrl: schema.url, worker: false });
        await expect(refused).rejects.toBeInstanceOf(StoreNotMigratedException);
        await expect(refused).rejects.toThrow("run 'machine-routes migrate --database postgres://");
        // A worker given the machine store too (machine-routes worker), before it claims a job.
        const store = await openStore(schema.url);
        await expect(startWorker({ store, handleSignals: false })).rejects.toBeInstanceOf(
          StoreNotMigratedException,
        );
        await store.close();
        await migrate(schema.url);
        const runtime = await MachineRuntime.open({ databaseUrl: schema.url, worker: false });
        const { snapshot } = await runtime.create(counterMachine);
        expect(await runtime.restore(counterMachine, snapshot.id)).toEqual(snapshot);
        await runtime.close();
      } finally {
        await schema.drop();
        await dropSchema(`${schema.schema}_jobs`);
      }
    },
  );

  it('should reject a bad configuration before opening anything', async () => {
    await expect(
      MachineRuntime.open({ env: { MACHINE_LOCK_TTL: 'never' } }),
    ).rejects.toBeInstanceOf(InvalidSettingsException);
  });
});
