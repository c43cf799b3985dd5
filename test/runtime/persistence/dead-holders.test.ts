/**
 * Rows of a dead holder are free at once (docs/persistence.md "Dead holders"): a process holding
 * an instance lock and a pending Idempotency-Key, both for a minute, refuses others while it
 * lives; SIGKILLed, both are taken over at the next attempt. On a SQLite file and PostgreSQL.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { holderGone, processHolder } from '../../../src/runtime/persistence/holders.js';
import type { IdempotencyClaim } from '../../../src/runtime/persistence/idempotency.js';
import type { Store } from '../../../src/runtime/persistence/store.js';
import { startFixture } from '../../support/child-process.js';
import { allBackends } from '../../support/stores.js';

const HOLDER = fileURLToPath(new URL('./fixtures/hold-rows.ts', import.meta.url));
const backends = (await allBackends('dead-holders')).filter(
  (b) => b.name === 'sqlite file' || b.name === 'postgres',
);

const claim = (key: string): IdempotencyClaim => ({
  scope: 'hold-rows',
  key,
  fingerprint: 'f',
  ownerId: 'taker',
  leaseMs: 60_000,
  ttlMs: 3_600_000,
});
const lock = (rootEventId: string) => ({ rootEventId, ownerId: 'taker', ttlMs: 60_000 });

describe.each(backends)('rows of a killed holder ($name)', (backend) => {
  let store: Store;
  beforeAll(async () => {
    await backend.setUp();
    store = await backend.open();
  });
  afterAll(async () => {
    await store?.close();
    await backend.tearDown();
  });

  it('should refuse while the holder lives and free its lock and key the moment it is killed', async () => {
    const id = `dead-holder-${backend.name.replace(/\W/g, '')}`;
    const holder = startFixture(HOLDER, [backend.url(), id, 'k1']);
    try {
      await holder.waitForLine((line) => line === 'HELD', 30_000);
      expect(await store.tryAcquireLock(lock(id))).toBe(false);
      expect((await store.idempotencyKeys.claim(claim('k1'))).kind).toBe('existing');
    } finally {
      holder.child.kill('SIGKILL');
    }
    expect(await holder.exited).toBe('SIGKILL');
    const killedAt = Date.now();
    // The kernel closes the dead process's sockets; the backend notices within milliseconds.
    let taken = false;
    while (!taken && Date.now() - killedAt < 5_000) taken = await store.tryAcquireLock(lock(id));
    expect(taken).toBe(true);
    expect(Date.now() - killedAt).toBeLessThan(2_000);
    expect(await store.idempotencyKeys.claim(claim('k1'))).toEqual({ kind: 'claimed' });
    expect((await store.readLock(id))!.ownerId).toBe('taker');
  }, 60_000);
});

describe('a SQLite holder (this host)', () => {
  const stat = (pid: number) => {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return text.slice(text.lastIndexOf(')') + 2).split(' ');
  };

  it('should be alive while its process runs, gone once killed or when its pid names another start', async () => {
    const mine = processHolder()!;
    const [boot, namespace] = mine.split('/');
    const child = spawn('sleep', ['30']);
    try {
      await new Promise((resolve) => child.once('spawn', resolve));
      const started = stat(child.pid!)[19];
      const holder = `${boot}/${namespace}/${child.pid}/${started}`;
      expect(holderGone(mine)).toBe(false);
      expect(holderGone(holder)).toBe(false);
      // The same pid with another start time: a reused pid, its holder long gone.
      expect(holderGone(`${boot}/${namespace}/${child.pid}/1`)).toBe(true);
      // Another boot or pid namespace cannot be judged: alive until the TTL.
      expect(holderGone(`other-boot/${namespace}/${child.pid}/1`)).toBe(false);
      expect(holderGone(`${boot}/pid:[1]/${child.pid}/1`)).toBe(false);
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
      expect(holderGone(holder)).toBe(true);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
