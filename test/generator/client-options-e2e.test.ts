/**
 * The client options a frontend needs, against the generated example server listening on
 * 127.0.0.1 on both durable stores: `throwOnError` (typed `ClientResponseError`), per-call
 * `fetch`, and the retry of 423 answers on an instance whose lock is really held.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type App } from '../../generated-example/app.gen.js';
import {
  ClientResponseError,
  createClient,
  isResponseError,
  type Client,
} from '../../generated-example/client.gen.js';
import { durableBackends } from '../support/durable-backends.js';

const backends = await durableBackends('client-options-e2e');

/** A fetch over the real one that counts the requests it sends. */
function countingFetch(): { fetch: typeof fetch; count: () => number; times: number[] } {
  let count = 0;
  const times: number[] = [];
  return {
    fetch: (url, init) => {
      count += 1;
      times.push(Date.now());
      return fetch(url, init);
    },
    count: () => count,
    times,
  };
}

/**
 * Holds the instance lock until `release()` is called (a real lock row: what a concurrent
 * send or a job holds); resolves once it is held.
 */
async function holdLock(app: App, machineId: string): Promise<{ release: () => Promise<void> }> {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let held!: () => void;
  const acquired = new Promise<void>((resolve) => (held = resolve));
  const holding = app.runtime.withLock(machineId, async () => {
    held();
    await released;
  });
  await acquired;
  return {
    release: async () => {
      release();
      await holding;
    },
  };
}

describe.each(backends)(
  'generated client options against the example server ($name)',
  (backend) => {
    let app: App;
    let baseUrl: string;
    let client: Client;

    beforeAll(async () => {
      app = await buildApp({ databaseUrl: await backend.setUp() });
      baseUrl = await app.listen(0);
      client = createClient({ baseUrl });
    }, 60_000);

    afterAll(async () => {
      await app?.close();
      await backend.tearDown();
    });

    async function submittedOrder(amount = 700): Promise<string> {
      const created = await client.order.create({ throwOnError: true });
      const machineId = created.body.data.id;
      await client.order.submit({ machineId, payload: { amount } }, { throwOnError: true });
      return machineId;
    }

    it('should resolve with 2xx answers and throw ClientResponseError on 4xx with throwOnError', async () => {
      const throwing = createClient({ baseUrl, throwOnError: true });
      const created = await throwing.order.create();
      // The type holds 201 only: no narrowing needed.
      const machineId: string = created.body.data.id;

      const invalid = await throwing.order
        .submit({ machineId, payload: { amount: 0 } })
        .catch((error: unknown) => error);
      expect(invalid).toBeInstanceOf(ClientResponseError);
      expect(invalid).toMatchObject({
        name: 'ClientResponseError',
        status: 422,
        body: { message: expect.any(String), errors: { 'payload.amount': [expect.any(String)] } },
      });
      expect((invalid as Error).message).toMatch(
        /^POST \/orders\/\{machineId\}\/submit answered 422: /,
      );

      const missing = await throwing.order
        .approve({ machineId: '01J0000000000000000000000Z' })
        .catch((error: unknown) => error);
      expect(isResponseError(missing) && missing.status).toBe(404);

      // Refused in draft: APPROVE needs a submitted order.
      await expect(throwing.order.approve({ machineId })).rejects.toMatchObject({ status: 409 });

      // Per call, the client's setting is overridden either way.
      expect((await throwing.order.approve({ machineId }, { throwOnError: false })).status).toBe(
        409,
      );
      await expect(
        client.order.approve({ machineId }, { throwOnError: true }),
      ).rejects.toMatchObject({ status: 409, body: { message: expect.any(String) } });
    });

    it('should send a call through the fetch given for that call, with its credentials and headers', async () => {
      const seen: RequestInit[] = [];
      const created = await client.order.create({
        credentials: 'include',
        headers: async () => ({ 'x-call': '1' }),
        fetch: (url, init) => {
          seen.push(init ?? {});
          return fetch(url, init);
        },
      });
      expect(created.status).toBe(201);
      expect(seen).toEqual([
        expect.objectContaining({
          credentials: 'include',
          headers: { accept: 'application/json', 'x-call': '1' },
        }),
      ]);
    });

    it('should answer 423 at once without retryOnLocked', async () => {
      const machineId = await submittedOrder();
      const lock = await holdLock(app, machineId);
      try {
        const counter = countingFetch();
        const answer = await client.order.cancel({ machineId }, { fetch: counter.fetch });
        expect(answer.status).toBe(423);
        expect(answer.body).toMatchObject({ data: { isProcessing: true } });
        expect(counter.count()).toBe(1);
      } finally {
        await lock.release();
      }
    });

    it('should retry a 423 with backoff until the lock is released, then commit the event', async () => {
      const machineId = await submittedOrder();
      const lock = await holdLock(app, machineId);
      const counter = countingFetch();
      const retrying = createClient({
        baseUrl,
        fetch: counter.fetch,
        retryOnLocked: { retries: 50, delay: 20, maxDelay: 80 },
      });
      const cancelling = retrying.order.cancel({ machineId });
      // Let it be refused a few times, then let go of the lock.
      await new Promise((resolve) => setTimeout(resolve, 300));
      await lock.release();
      const cancelled = await cancelling;
      expect(cancelled.status === 200 && cancelled.body.data.state).toEqual(['order.cancelled']);
      expect(counter.count()).toBeGreaterThan(2);
      expect(counter.count()).toBeLessThan(50);
      // Exactly one CANCEL was applied: the refused tries left no trace in the history.
      const history = await app.runtime.store.history(machineId);
      expect(history.filter((step) => JSON.stringify(step).includes('"CANCEL"'))).toHaveLength(1);
    });

    it('should stop after the bound and answer the 423, with growing pauses between tries', async () => {
      const machineId = await submittedOrder();
      const lock = await holdLock(app, machineId);
      try {
        const counter = countingFetch();
        const started = Date.now();
        const answer = await client.order.cancel(
          { machineId },
          { fetch: counter.fetch, retryOnLocked: { retries: 3, delay: 40, maxDelay: 1000 } },
        );
        expect(answer.status).toBe(423);
        expect(counter.count()).toBe(4);
        // Pauses are at least half their ceiling: 20, 40 and 80 ms.
        const gaps = counter.times.slice(1).map((time, index) => time - counter.times[index]!);
        expect(gaps[0]).toBeGreaterThanOrEqual(19);
        expect(gaps[1]).toBeGreaterThanOrEqual(39);
        expect(gaps[2]).toBeGreaterThanOrEqual(79);
        expect(Date.now() - started).toBeLessThan(5_000);
        // With throwOnError the exhausted retry throws the 423 and its snapshot.
        await expect(
          client.order.cancel(
            { machineId },
            { throwOnError: true, retryOnLocked: { retries: 1, delay: 10 } },
          ),
        ).rejects.toMatchObject({
          status: 423,
          body: { data: { id: machineId, isProcessing: true } },
        });
      } finally {
        await lock.release();
      }
    });

    it('should stop retrying when the call is aborted during a pause', async () => {
      const machineId = await submittedOrder();
      const lock = await holdLock(app, machineId);
      try {
        const controller = new AbortController();
        const counter = countingFetch();
        const cancelling = client.order.cancel(
          { machineId },
          {
            signal: controller.signal,
            fetch: counter.fetch,
            retryOnLocked: { retries: 100, delay: 5_000, maxDelay: 5_000 },
          },
        );
        await new Promise((resolve) => setTimeout(resolve, 200));
        controller.abort(new Error('left the page'));
        await expect(cancelling).rejects.toThrow('left the page');
        expect(counter.count()).toBe(1);
      } finally {
        await lock.release();
      }
    });
  },
);
