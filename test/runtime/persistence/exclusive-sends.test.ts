/**
 * `exclusiveSends` on SQLite: each send is one BEGIN IMMEDIATE transaction without a lock row,
 * with the outcomes of the lock-row path (same rows, refusal while someone else holds a lock,
 * expired locks taken over, nothing written on errors).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ulid } from 'ulidx';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  MachineAlreadyRunningException,
  MachineNotFoundException,
  MachineValidationException,
  NoTransitionDefinitionFoundException,
} from '../../../src/runtime/errors.js';
import { MachineRuntime } from '../../../src/runtime/persistence/machine-runtime.js';
import { SqliteStore } from '../../../src/runtime/persistence/sqlite-store.js';
import { counterMachine } from './fixtures/machines.js';

describe('MachineRuntime with exclusiveSends (SQLite)', () => {
  let dir: string;
  let store: SqliteStore;
  let runtime: MachineRuntime;
  let plain: MachineRuntime;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'mr-exclusive-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  beforeEach(() => {
    store = new SqliteStore({ filename: join(dir, `${ulid()}.db`) });
    runtime = new MachineRuntime({ store, exclusiveSends: true });
    plain = new MachineRuntime({ store });
  });
  afterEach(async () => {
    await plain.close().catch(() => {});
    await runtime.close();
  });

  it('should commit in one transaction, write no lock row, and write the rows of the lock-row path', async () => {
    const { snapshot: a } = await runtime.create(counterMachine);
    const { snapshot: b } = await plain.create(counterMachine);
    const tryAcquireLock = vi.spyOn(store, 'tryAcquireLock');
    const exclusive = await runtime.send(counterMachine, a.id, { type: 'INC', actor: 'u' });
    expect(tryAcquireLock).not.toHaveBeenCalled();
    const reference = await plain.send(counterMachine, b.id, { type: 'INC', actor: 'u' });
    expect(exclusive.snapshot).toMatchObject({ context: { count: 1 }, value: b.value });
    expect(exclusive.snapshot.sequence).toBe(reference.snapshot.sequence);
    expect(await runtime.restore(counterMachine, a.id)).toEqual(exclusive.snapshot);
    const strip = (records: { type: string; source: string; sequence: number }[]) =>
      records.map(({ type, source, sequence }) => ({ type, source, sequence }));
    expect(strip(await store.history(a.id))).toEqual(strip(await store.history(b.id)));
    expect((await store.history(a.id)).slice(a.sequence)).toEqual(exclusive.history);
    expect(await store.readLock(a.id)).toBeNull();
  });

  it('should serialize concurrent sends of one process, gap-free', async () => {
    const { snapshot: created } = await runtime.create(counterMachine);
    await Promise.all(
      Array.from({ length: 20 }, () => runtime.send(counterMachine, created.id, { type: 'INC' })),
    );
    const restored = await runtime.restore(counterMachine, created.id);
    expect(restored.context.count).toBe(20);
    const history = await store.history(created.id);
    expect(history.map((record) => record.sequence)).toEqual(history.map((_, i) => i + 1));
    expect(restored.sequence).toBe(history.length);
  });

  it('should refuse while someone else holds a live lock, with the committed snapshot, writing nothing', async () => {
    const { snapshot: created } = await runtime.create(counterMachine);
    const owner = ulid();
    await store.tryAcquireLock({ rootEventId: created.id, ownerId: owner, ttlMs: 60_000 });
    const error = await runtime
      .send(counterMachine, created.id, { type: 'INC' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MachineAlreadyRunningException);
    expect((error as MachineAlreadyRunningException).snapshot).toEqual(created);
    expect(await store.history(created.id)).toHaveLength(created.sequence);
    expect((await store.readLock(created.id))?.ownerId).toBe(owner);
  });

  it('should refuse sends while withLock holds the instance, and let the locked instance send', async () => {
    const { snapshot: created } = await runtime.create(counterMachine);
    const count = await runtime.withLock(created.id, async (instance) => {
      await expect(
        runtime.send(counterMachine, created.id, { type: 'INC' }),
      ).rejects.toBeInstanceOf(MachineAlreadyRunningException);
      return (await instance.send(counterMachine, { type: 'INC' })).snapshot.context.count;
    });
    expect(count).toBe(1);
    expect(await store.readLock(created.id)).toBeNull();
  });

  it('should take over (delete) an expired lock and commit', async () => {
    const { snapshot: created } = await runtime.create(counterMachine);
    await store.tryAcquireLock({ rootEventId: created.id, ownerId: ulid(), ttlMs: 20 });
    await new Promise((resolve) => setTimeout(resolve, 40));
    const { snapshot } = await runtime.send(counterMachine, created.id, { type: 'INC' });
    expect(snapshot.context.count).toBe(1);
    expect(await store.readLock(created.id)).toBeNull();
  });

  it('should write nothing when no transition accepts the event, and 404 unknown or foreign ids', async () => {
    const { snapshot: created } = await runtime.create(counterMachine);
    await expect(runtime.send(counterMachine, created.id, { type: 'NOPE' })).rejects.toBeInstanceOf(
      NoTransitionDefinitionFoundException,
    );
    expect(await store.history(created.id)).toHaveLength(created.sequence);
    expect(await runtime.restore(counterMachine, created.id)).toEqual(created);
    await expect(runtime.send(counterMachine, ulid(), { type: 'INC' })).rejects.toBeInstanceOf(
      MachineNotFoundException,
    );
  });

  it('should persist a failed validation guard, then throw', async () => {
    const { snapshot: created } = await runtime.create(counterMachine);
    await expect(
      runtime.send(counterMachine, created.id, { type: 'ADD', payload: { amount: -1 } }),
    ).rejects.toBeInstanceOf(MachineValidationException);
    const restored = await runtime.restore(counterMachine, created.id);
    expect(restored.context).toEqual(created.context);
    expect(restored.sequence).toBeGreaterThan(created.sequence);
    expect(await store.history(created.id)).toHaveLength(restored.sequence);
  });
});
