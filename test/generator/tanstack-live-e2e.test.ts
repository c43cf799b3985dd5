/**
 * The live query of the generated TanStack Query bindings (`queries.order.live`) with a real
 * QueryClient and QueryObserver from @tanstack/query-core, following the example server's state
 * stream over real HTTP (Server-Sent Events) on both durable stores: every committed state, sent
 * by someone else, lands in the live query and in the instance entry without a read; the reads
 * refetch; a final state ends the stream and the query stays fresh; the last observer's
 * unsubscribe aborts the stream; a server restart is survived by reconnecting after the last
 * sequence; an unknown instance fails at once.
 */
import { QueryClient, QueryObserver } from '@tanstack/query-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildApp, type App } from '../../generated-example/app.gen.js';
import {
  createClient,
  UnexpectedResponseError,
  type OrderResponse,
} from '../../generated-example/client.gen.js';
import { createQueries, QUERY_ROOT, type Queries } from '../../generated-example/query.gen.js';
import { durableBackends } from '../support/durable-backends.js';

const backends = await durableBackends('tanstack-live-e2e');

/** A fetch over the real one that records each request: method, path, Last-Event-ID, signal. */
function recordingFetch() {
  const requests: Array<{ line: string; lastEventId: string | null; signal: AbortSignal | null }> =
    [];
  const recorded: typeof fetch = (url, init) => {
    const headers = new Headers(init?.headers);
    requests.push({
      line: `${init?.method ?? 'GET'} ${new URL(String(url)).pathname}`,
      lastEventId: headers.get('last-event-id'),
      signal: init?.signal ?? null,
    });
    return fetch(url, init);
  };
  return { fetch: recorded, requests };
}

describe.each(backends)('the live query against the example server ($name)', (backend) => {
  let app: App;
  let baseUrl: string;
  let databaseUrl: string;

  beforeAll(async () => {
    databaseUrl = await backend.setUp();
    app = await buildApp({ databaseUrl });
    baseUrl = await app.listen(0);
  }, 60_000);

  afterAll(async () => {
    await app?.close();
    await backend.tearDown();
  });

  /** Someone else's request: a plain fetch, so only the stream can tell the query. */
  async function post(path: string, body?: unknown, method = 'POST'): Promise<OrderResponse> {
    const response = await fetch(`${baseUrl}${path}`, {
      method,
      ...(body === undefined
        ? {}
        : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
    });
    expect(response.status).toBeLessThan(300);
    return (await response.json()) as OrderResponse;
  }

  function setUp(): { queryClient: QueryClient; queries: Queries } & ReturnType<
    typeof recordingFetch
  > {
    const recorder = recordingFetch();
    const queryClient = new QueryClient();
    const queries = createQueries(createClient({ baseUrl, fetch: recorder.fetch }), queryClient);
    return { queryClient, queries, ...recorder };
  }

  it('should keep the instance entry live from the stream until a final state', async () => {
    const { queryClient, queries, requests } = setUp();
    const machineId = (await post('/orders/create')).data.id;
    const live = queries.order.live({ machineId });
    expect(live.queryKey).toEqual([QUERY_ROOT, 'order', { machineId }, 'live']);
    const instanceKey = queries.order.instance({ machineId }).queryKey;

    const states: string[][] = [];
    const observer = new QueryObserver(queryClient, live);
    let last: OrderResponse | undefined;
    const unsubscribe = observer.subscribe((result) => {
      // Typed by the stream's message: no cast. Once per message (not per status change).
      if (result.data !== undefined && result.data !== last) states.push(result.data.data.state);
      last = result.data;
    });
    // An observer of a read of the instance: each state invalidates it, so it refetches.
    const summary = new QueryObserver(queryClient, {
      ...queries.order.read.summary({ machineId }),
      staleTime: 60_000,
    });
    const summaries: unknown[] = [];
    const stopSummary = summary.subscribe((result) => {
      if (result.data !== undefined) summaries.push(result.data.data.output);
    });
    try {
      await vi.waitFor(() => expect(states).toEqual([['order.draft']]), { timeout: 10_000 });
      const submitted = await post(`/orders/${machineId}/submit`, { payload: { amount: 700 } });
      await vi.waitFor(() => expect(states.at(-1)).toEqual(['order.submitted']), {
        timeout: 10_000,
      });
      // The instance entry holds the stream's message: nobody read the instance.
      expect(queryClient.getQueryData(instanceKey)?.data.state).toEqual(['order.submitted']);
      expect(queryClient.getQueryData(live.queryKey)?.data.output).toEqual(submitted.data.output);
      await vi.waitFor(() => expect(summaries.at(-1)).toEqual({ total: 700, approved: true }), {
        timeout: 10_000,
      });
      expect(requests.filter((request) => request.line.endsWith('/status'))).toEqual([]);

      // A final state ends the stream; one reconnection after its sequence finds nothing newer.
      await post(`/orders/${machineId}/cancel`, undefined, 'DELETE');
      await vi.waitFor(() => expect(observer.getCurrentResult().fetchStatus).toBe('idle'), {
        timeout: 10_000,
      });
      const result = observer.getCurrentResult();
      expect(result.status).toBe('success');
      expect(result.data?.data.state).toEqual(['order.cancelled']);
      expect(result.isStale).toBe(false);
      const streams = requests.filter((request) => request.line.endsWith('/events'));
      expect(streams).toHaveLength(2);
      expect(streams[0]!.lastEventId).toBeNull();
      expect(Number(streams[1]!.lastEventId)).toBeGreaterThan(0);
      expect(queryClient.getQueryData(instanceKey)?.data.state).toEqual(['order.cancelled']);
      expect(states).toEqual([['order.draft'], ['order.submitted'], ['order.cancelled']]);
    } finally {
      unsubscribe();
      stopSummary();
      queryClient.clear();
    }
  });

  it('should abort the stream when the last observer unsubscribes', async () => {
    const { queryClient, queries, requests } = setUp();
    const machineId = (await post('/orders/create')).data.id;
    const observer = new QueryObserver(queryClient, queries.order.live({ machineId }));
    const unsubscribe = observer.subscribe(() => {});
    await vi.waitFor(() => expect(observer.getCurrentResult().data).toBeDefined(), {
      timeout: 10_000,
    });
    const stream = requests.find((request) => request.line.endsWith('/events'))!;
    expect(stream.signal?.aborted).toBe(false);
    unsubscribe();
    expect(stream.signal?.aborted).toBe(true);
    // Still stale: a new observer starts the stream again.
    const again = observer.subscribe(() => {});
    await vi.waitFor(
      () => expect(requests.filter((request) => request.line.endsWith('/events'))).toHaveLength(2),
      { timeout: 10_000 },
    );
    again();
    queryClient.clear();
  });

  it('should fail at once on an unknown instance, without reconnecting', async () => {
    const { queryClient, queries, requests } = setUp();
    const observer = new QueryObserver(
      queryClient,
      queries.order.live({ machineId: '01ARZ3NDEKTSV4RRFFQ69G5FAV' }),
    );
    const unsubscribe = observer.subscribe(() => {});
    await vi.waitFor(() => expect(observer.getCurrentResult().status).toBe('error'), {
      timeout: 10_000,
    });
    const error = observer.getCurrentResult().error;
    expect(error).toBeInstanceOf(UnexpectedResponseError);
    expect((error as UnexpectedResponseError).status).toBe(404);
    expect(requests).toHaveLength(1);
    unsubscribe();
    queryClient.clear();
  });

  it('should reconnect after a server restart and resume after the last sequence', async () => {
    const { queryClient, queries, requests } = setUp();
    const machineId = (await post('/orders/create')).data.id;
    const states: string[][] = [];
    const observer = new QueryObserver(
      queryClient,
      queries.order.live({ machineId }, { reconnect: { delay: 50, maxDelay: 200 } }),
    );
    const unsubscribe = observer.subscribe((result) => {
      if (result.data !== undefined) states.push(result.data.data.state);
    });
    try {
      await vi.waitFor(() => expect(states).toEqual([['order.draft']]), { timeout: 10_000 });
      const port = new URL(baseUrl).port;
      // The server goes away (its close ends the stream), the client keeps trying.
      await app.close();
      await vi.waitFor(
        () =>
          expect(
            requests.filter((request) => request.line.endsWith('/events')).length,
          ).toBeGreaterThanOrEqual(3),
        { timeout: 10_000 },
      );
      app = await buildApp({ databaseUrl });
      baseUrl = await app.listen(Number(port));
      await post(`/orders/${machineId}/submit`, { payload: { amount: 300 } });
      await vi.waitFor(() => expect(states.at(-1)).toEqual(['order.submitted']), {
        timeout: 15_000,
      });
      // Resumed: the draft was not sent again.
      expect(states).toEqual([['order.draft'], ['order.submitted']]);
      const streams = requests.filter((request) => request.line.endsWith('/events'));
      expect(streams.slice(1).every((request) => request.lastEventId !== null)).toBe(true);
      expect(observer.getCurrentResult().status).toBe('success');
    } finally {
      unsubscribe();
      queryClient.clear();
    }
  }, 60_000);

  it('should fail after its bounded reconnections when nothing answers', async () => {
    const queryClient = new QueryClient();
    const queries = createQueries(createClient({ baseUrl: 'http://127.0.0.1:9' }), queryClient);
    const observer = new QueryObserver(
      queryClient,
      queries.order.live({ machineId: 'x' }, { reconnect: { retries: 2, delay: 10 } }),
    );
    const unsubscribe = observer.subscribe(() => {});
    await vi.waitFor(() => expect(observer.getCurrentResult().status).toBe('error'), {
      timeout: 10_000,
    });
    expect(observer.getCurrentResult().error).toBeInstanceOf(TypeError);
    unsubscribe();
    queryClient.clear();
  });
});
