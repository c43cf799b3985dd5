import { describe, expect, it } from 'vitest';
import { InMemoryJobQueue, type Json } from '../../../src/runtime/index.js';

describe('InMemoryJobQueue', () => {
  it('should run due jobs in runAt order, including jobs they enqueue, and hold delayed ones', async () => {
    let now = new Date('2026-01-01T00:00:00Z');
    const queue = new InMemoryJobQueue({ now: () => now });
    const ran: Json[] = [];
    queue.work('echo', async (payload) => {
      ran.push(payload);
      if (payload === 'first') await queue.enqueue({ name: 'echo', payload: 'chained' });
    });

    await queue.enqueue({
      name: 'echo',
      payload: 'later',
      runAt: new Date('2026-01-01T00:05:00Z'),
    });
    await queue.enqueue({ name: 'echo', payload: 'first' });
    expect(await queue.runDue()).toBe(2);
    expect(ran).toEqual(['first', 'chained']);
    expect(queue.pending.map((job) => job.payload)).toEqual(['later']);

    now = new Date('2026-01-01T00:05:00Z');
    await queue.runDue();
    expect(ran).toEqual(['first', 'chained', 'later']);
  });

  it('should ignore a job whose key is already waiting', async () => {
    const queue = new InMemoryJobQueue();
    await queue.enqueue({ name: 'a', payload: 1, key: 'k' });
    await queue.enqueue({ name: 'a', payload: 2, key: 'k' });

    expect(queue.pending.map((job) => job.payload)).toEqual([1]);
  });

  it('should record failures and retry as configured', async () => {
    const queue = new InMemoryJobQueue({ retries: 1 });
    const attempts: number[] = [];
    queue.work('flaky', (_payload, job) => {
      attempts.push(job.attempt);
      throw new Error('nope');
    });
    await queue.enqueue({ name: 'flaky', payload: null });

    await queue.runDue();

    expect(attempts).toEqual([1, 2]);
    expect(queue.failures).toHaveLength(2);
    expect(queue.pending).toEqual([]);
  });

  it('should run jobs in the background once started', async () => {
    const queue = new InMemoryJobQueue();
    const ran: Json[] = [];
    queue.work('bg', (payload) => void ran.push(payload));
    queue.start();

    await queue.enqueue({ name: 'bg', payload: 'x' });
    await queue.idle();
    await queue.stop();

    expect(ran).toEqual(['x']);
  });
});
