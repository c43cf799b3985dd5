/**
 * `runLocked`, the one locked step: every way of meeting another writer (a lock row held
 * elsewhere, a lock this process holds, a commit fenced out after the lock expired, a lock-free
 * commit meeting a lock row, a SQLite file busy past its timeout at the lock or at the commit)
 * answers `MachineAlreadyRunningException` carrying the last committed snapshot, and writes
 * nothing of its own. Real SQLite files; "another process" is a second runtime on the same file
 * (its own lock manager and connection).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  MachineAlreadyRunningException,
  MachineRuntime,
  SqliteStore,
  transition,
  type MachineSnapshot,
} from '../../../src/runtime/index.js';
import { holdLock } from '../../../src/runtime/engine/lock-hold.js';
import {
  runLocked,
  type LockMode,
  type LockedStep,
} from '../../../src/runtime/engine/locked-step.js';
import { counterMachine } from '../persistence/fixtures/machines.js';

let dir: string;
let runtime: MachineRuntime;
let other: MachineRuntime;
let busy: SqliteStore;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'mr-locked-step-'));
  const filename = join(dir, 'machines.db');
  const store = new SqliteStore({ filename, busyTimeoutMs: 30 });
  await store.migrate();
  runtime = new MachineRuntime({ store });
  other = new MachineRuntime({ store: new SqliteStore({ filename }) });
  busy = new SqliteStore({ filename });
});
afterEach(async () => {
  await runtime.close();
  await other.close();
  await busy.close();
  rmSync(dir, { recursive: true, force: true });
});

/** One INC of the counter on the snapshot given, to commit. */
function increment(snapshot: MachineSnapshot): LockedStep<string> {
  const result = transition(counterMachine, snapshot, { type: 'INC' });
  return { value: 'written', commit: { main: { result, from: snapshot }, at: new Date() } };
}

/** Holds `database`'s write lock (another connection's BEGIN IMMEDIATE) until released. */
function lockDatabase(store: SqliteStore): () => void {
  store.database.prepare('BEGIN IMMEDIATE').run();
  return () => store.database.prepare('ROLLBACK').run();
}

interface ConflictCase {
  name: string;
  lock: LockMode | 'held-here';
  /** Set up the conflict before the step; returns what undoes it. */
  before?: (id: string) => Promise<() => Promise<void> | void>;
  /** Runs inside `compute`, before the step is returned. */
  during?: (id: string) => Promise<void>;
  ttlMs?: number;
}

/** Holds the instance's lock in the other runtime until the returned function is called. */
async function holdElsewhere(id: string): Promise<() => Promise<void>> {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let taken!: () => void;
  const held = new Promise<void>((resolve) => (taken = resolve));
  const holding = other.withLock(id, async () => {
    taken();
    await released;
  });
  await held;
  return async () => {
    release();
    await holding;
  };
}

const cases: ConflictCase[] = [
  { name: 'lock row held by another process (try)', lock: 'try', before: holdElsewhere },
  {
    name: 'lock row held by another process past the wait',
    lock: { waitMs: 60 },
    before: holdElsewhere,
  },
  {
    name: 'lock row held by another process (lock-free slot)',
    lock: 'slot',
    before: holdElsewhere,
  },
  { name: 'lock held by this process', lock: 'held-here' },
  {
    name: 'lock-free commit meets a lock row taken meanwhile',
    lock: 'slot',
    during: async (id) => {
      const release = await holdElsewhere(id);
      cleanups.push(release);
    },
  },
  {
    name: 'commit fenced out: the lock expired and another writer committed',
    lock: 'try',
    ttlMs: 20,
    during: async (id) => {
      await sleep(40);
      await other.send(counterMachine, id, { type: 'INC' });
    },
  },
  {
    name: 'database busy past its timeout when taking the lock',
    lock: 'try',
    before: async () => lockDatabase(busy),
  },
  {
    name: 'database busy past its timeout at the commit',
    lock: 'try',
    during: async () => {
      cleanups.push(lockDatabase(busy));
    },
  },
];

let cleanups: (() => Promise<void> | void)[] = [];

describe('runLocked', () => {
  it.each(cases)('should answer contention with the committed snapshot: $name', async (c) => {
    cleanups = [];
    const { snapshot } = await runtime.create(counterMachine);
    const id = snapshot.id;
    if (c.before) cleanups.push(await c.before(id));
    const run = (lock: LockMode) =>
      runLocked(runtime.context, {
        id,
        lock,
        context: 'test',
        machineId: counterMachine.id,
        ...(c.ttlMs === undefined ? {} : { ttlMs: c.ttlMs }),
        compute: async (fresh) => {
          await c.during?.(id);
          return increment(fresh!);
        },
      });
    let outcome: unknown;
    try {
      if (c.lock === 'held-here') {
        await holdLock(runtime.context, { id, lock: 'try', context: 'test' }, async () => {
          outcome = await run('try').catch((error: unknown) => error);
        });
      } else outcome = await run(c.lock).catch((error: unknown) => error);
      // The snapshot is read while the conflict still stands (a busy database allows reads).
      expect(outcome).toBeInstanceOf(MachineAlreadyRunningException);
    } finally {
      for (const cleanup of cleanups.reverse()) await cleanup();
    }
    const committed = await runtime.store.load(id);
    expect((outcome as MachineAlreadyRunningException).snapshot).toEqual(committed);
    expect((outcome as MachineAlreadyRunningException).code).toBe('MR_MACHINE_ALREADY_RUNNING');
    // Nothing of the refused step was written: only the other writer's INC, if any.
    const others = c.name.startsWith('commit fenced') ? 1 : 0;
    expect(committed!.context).toEqual({ count: others });
  });

  it('should write the step and release the lock when nobody contends', async () => {
    const { snapshot } = await runtime.create(counterMachine);
    for (const lock of ['try', { waitMs: 50 }, 'slot'] as const) {
      expect(
        await runLocked(runtime.context, {
          id: snapshot.id,
          lock,
          context: 'test',
          compute: (fresh) => increment(fresh!),
        }),
      ).toBe('written');
    }
    expect((await runtime.store.load(snapshot.id))!.context).toEqual({ count: 3 });
    expect(await runtime.store.readLock(snapshot.id)).toBeNull();
  });
});
