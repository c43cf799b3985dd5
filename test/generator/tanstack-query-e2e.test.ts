/**
 * The generated TanStack Query bindings driven by @tanstack/query-core itself (a real
 * QueryClient, QueryObserver and MutationObserver: what every framework adapter runs) against
 * the generated example server listening on 127.0.0.1, on both durable stores.
 */
import { MutationObserver, QueryClient, QueryObserver } from '@tanstack/query-core';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildApp, type App } from '../../generated-example/app.gen.js';
import {
  ClientResponseError,
  createClient,
  isResponseError,
  type Client,
} from '../../generated-example/client.gen.js';
import { createQueries, QUERY_ROOT, type Queries } from '../../generated-example/query.gen.js';
import { validateConfig } from '../../src/generator/validate-config.js';
import { durableBackends } from '../support/durable-backends.js';

const backends = await durableBackends('tanstack-query-e2e');

/** A fetch over the real one that records `METHOD path` of each request. */
function recordingFetch(): { fetch: typeof fetch; requests: string[] } {
  const requests: string[] = [];
  return {
    requests,
    fetch: (url, init) => {
      requests.push(`${init?.method ?? 'GET'} ${new URL(String(url)).pathname}`);
      return fetch(url, init);
    },
  };
}

describe.each(backends)('TanStack Query bindings against the example server ($name)', (backend) => {
  let app: App;
  let baseUrl: string;
  let queryClient: QueryClient;
  let recorder: ReturnType<typeof recordingFetch>;
  let client: Client;
  let queries: Queries;

  beforeAll(async () => {
    app = await buildApp({ databaseUrl: await backend.setUp() });
    baseUrl = await app.listen(0);
  }, 60_000);

  afterAll(async () => {
    await app?.close();
    await backend.tearDown();
  });

  beforeAll(() => {
    // Fresh cache per file; each test makes its own instances.
    queryClient = new QueryClient();
    recorder = recordingFetch();
    client = createClient({ baseUrl, fetch: recorder.fetch });
    queries = createQueries(client, queryClient);
  });

  afterEach(() => {
    recorder.requests.length = 0;
  });

  afterAll(() => queryClient.clear());

  /** Runs a mutation the way adapters do (`useMutation` is a MutationObserver). */
  function mutation<TData, TError, TVariables>(
    options: ConstructorParameters<typeof MutationObserver<TData, TError, TVariables>>[1],
  ) {
    return new MutationObserver<TData, TError, TVariables>(queryClient, options);
  }

  async function createdOrder(): Promise<string> {
    const created = await mutation(queries.order.create()).mutate();
    return created.data.id;
  }

  it('should write the envelopes of create and of each event into the instance entry', async () => {
    const machineId = await createdOrder();
    const instance = queries.order.instance({ machineId });
    expect(instance.queryKey).toEqual([QUERY_ROOT, 'order', { machineId }, 'instance']);
    // Typed by the key's tag: no cast.
    expect(queryClient.getQueryData(instance.queryKey)?.data.state).toEqual(['order.draft']);

    // An observer (useQuery) of the entry sees the event's answer without fetching it again.
    const observer = new QueryObserver(queryClient, { ...instance, staleTime: 60_000 });
    const states: string[][] = [];
    const unsubscribe = observer.subscribe((result) => {
      if (result.data !== undefined) states.push(result.data.data.state);
    });
    try {
      const submitted = await mutation(queries.order.submit()).mutate({
        machineId,
        payload: { amount: 120, note: 'gift' },
      });
      expect(submitted.data.output).toEqual({ total: 120, note: 'gift', lastQuote: null });
      expect(states.at(-1)).toEqual(['order.submitted']);
      const cached = queryClient.getQueryData(instance.queryKey);
      expect(cached).toEqual(submitted);
      expect(recorder.requests).toEqual([
        'POST /orders/create',
        `POST /orders/${machineId}/submit`,
      ]);
    } finally {
      unsubscribe();
    }
  });

  it('should fetch the instance with its read, and each read as a query of its own', async () => {
    const machineId = await createdOrder();
    queryClient.removeQueries({ queryKey: queries.order.key({ machineId }) });
    await mutation(queries.order.submit()).mutate({ machineId, payload: { amount: 300 } });
    queryClient.removeQueries({ queryKey: queries.order.key({ machineId }) });
    recorder.requests.length = 0;

    const envelope = await queryClient.fetchQuery(queries.order.instance({ machineId }));
    expect(envelope.data).toMatchObject({ id: machineId, state: ['order.submitted'] });
    const summary = await queryClient.fetchQuery(queries.order.read.summary({ machineId }));
    expect(summary.data).toEqual({
      id: machineId,
      state: ['order.submitted'],
      output: expect.any(Object),
      isProcessing: false,
    });
    expect(recorder.requests).toEqual([
      `GET /orders/${machineId}/status`,
      `GET /orders/${machineId}/summary`,
    ]);
  });

  it('should refetch the reads an observer watches once an event changed the instance', async () => {
    const machineId = await createdOrder();
    await mutation(queries.order.submit()).mutate({ machineId, payload: { amount: 40 } });
    const observer = new QueryObserver(queryClient, {
      ...queries.order.read.status({ machineId }),
      staleTime: 60_000,
    });
    const unsubscribe = observer.subscribe(() => {});
    try {
      await vi.waitFor(() =>
        expect(observer.getCurrentResult().data?.data.state).toEqual(['order.submitted']),
      );
      await mutation(queries.order.approve()).mutate({ machineId });
      await vi.waitFor(() =>
        expect(observer.getCurrentResult().data?.data.state).toEqual(['order.approved']),
      );
      expect(recorder.requests.filter((request) => request.endsWith('/status'))).toHaveLength(2);
    } finally {
      unsubscribe();
    }
  });

  it("should fire the mutation's onError on a 4xx with a typed ClientResponseError, keeping the cache", async () => {
    const machineId = await createdOrder();
    const before = queryClient.getQueryData(queries.order.instance({ machineId }).queryKey);
    const errors: unknown[] = [];
    const observer = mutation({
      ...queries.order.submit(),
      onError: (error) => {
        errors.push(error);
      },
    });
    await expect(observer.mutate({ machineId, payload: { amount: 0 } })).rejects.toBeInstanceOf(
      ClientResponseError,
    );
    expect(errors).toHaveLength(1);
    const error = observer.getCurrentResult().error;
    expect(
      isResponseError(error) && error.status === 422 && 'errors' in error.body && error.body.errors,
    ).toEqual({
      'payload.amount': [expect.any(String)],
    });
    expect(queryClient.getQueryData(queries.order.instance({ machineId }).queryKey)).toBe(before);
  });

  it('should refetch the instance when an event is refused (409): the cached state was stale', async () => {
    const machineId = await createdOrder();
    const observer = new QueryObserver(queryClient, {
      ...queries.order.instance({ machineId }),
      staleTime: 60_000,
    });
    const unsubscribe = observer.subscribe(() => {});
    try {
      await vi.waitFor(() =>
        expect(observer.getCurrentResult().data?.data.state).toEqual(['order.draft']),
      );
      // Another tab submits the order behind this cache's back: the cache still says draft.
      await createClient({ baseUrl }).order.submit({ machineId, payload: { amount: 10 } });
      recorder.requests.length = 0;
      const refused = await mutation(queries.order.submit())
        .mutate({ machineId, payload: { amount: 20 } })
        .catch((error: unknown) => error);
      expect(refused).toMatchObject({ status: 409 });
      await vi.waitFor(() =>
        expect(observer.getCurrentResult().data?.data.state).toEqual(['order.submitted']),
      );
      expect(recorder.requests).toContain(`GET /orders/${machineId}/status`);
    } finally {
      unsubscribe();
    }
  });

  it('should retry a 423 through a mutation until the lock is released', async () => {
    const machineId = await createdOrder();
    await mutation(queries.order.submit()).mutate({ machineId, payload: { amount: 70 } });
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let held!: () => void;
    const acquired = new Promise<void>((resolve) => (held = resolve));
    const holding = app.runtime.withLock(machineId, async () => {
      held();
      await released;
    });
    await acquired;
    const cancelling = mutation(
      queries.order.cancel({ retryOnLocked: { retries: 40, delay: 20, maxDelay: 60 } }),
    ).mutate({ machineId });
    await new Promise((resolve) => setTimeout(resolve, 200));
    release();
    await holding;
    const cancelled = await cancelling;
    expect(cancelled.data.state).toEqual(['order.cancelled']);
    const cancels = recorder.requests.filter((request) => request.endsWith('/cancel'));
    expect(cancels.length).toBeGreaterThan(1);
    expect(
      queryClient.getQueryData(queries.order.instance({ machineId }).queryKey)?.data.state,
    ).toEqual(['order.cancelled']);
  });

  it('should key model-bound instances by their model parameter and leave stateless routes uncached', async () => {
    const paid = await mutation(queries.invoice.pay()).mutate({
      invoice: 'INV-2',
      payload: { amount: 50, method: 'card' },
    });
    expect(
      queryClient.getQueryData(queries.invoice.instance({ invoice: 'INV-2' }).queryKey),
    ).toEqual(paid);
    expect(queries.invoice.instance({ invoice: 'INV-2' }).queryKey).toEqual([
      QUERY_ROOT,
      'invoice',
      { invoice: 'INV-2' },
      'instance',
    ]);

    const before = queryClient.getQueryCache().getAll().length;
    const sum = await mutation(queries.calculator.add()).mutate({ payload: { a: 2, b: 3 } });
    expect(sum.data.output).toEqual({ result: 5 });
    expect(queryClient.getQueryCache().getAll()).toHaveLength(before);
  });

  it('should share one instance entry between the registrations of a machine, even without reads', async () => {
    const staffQueries = createQueries(
      createClient({ baseUrl, headers: { authorization: 'Bearer staff-token' } }),
      queryClient,
    );
    const ticket = await mutation(queries.ticket.create()).mutate();
    const machineId = ticket.data.id;
    const instance = queries.ticket.instance({ machineId });
    // No read fetches a ticket: the entry is disabled and filled by the mutations.
    expect(instance.enabled).toBe(false);
    const observer = new QueryObserver(queryClient, instance);
    const seen: string[][] = [];
    const unsubscribe = observer.subscribe((result) => {
      if (result.data !== undefined) seen.push(result.data.data.state);
    });
    try {
      await mutation(queries.ticket.comment()).mutate({ machineId, payload: { text: 'hi' } });
      await mutation(staffQueries.ticketStaff.assign()).mutate({
        machineId,
        payload: { agent: 'ada' },
      });
      expect(seen).toEqual([['ticket.open'], ['ticket.assigned']]);
      expect(staffQueries.ticketStaff.instance({ machineId }).queryKey).toEqual(instance.queryKey);
      expect(recorder.requests.filter((request) => request.startsWith('GET'))).toEqual([]);
    } finally {
      unsubscribe();
    }
  });
});

describe('client.tanstackQuery in the config', () => {
  it('should need the client output kind, and name the key when misspelt', () => {
    expect(
      validateConfig({
        registrations: [],
        client: { tanstackQuery: true },
        output: { kinds: ['handlers', 'openapi'] },
      }).map((issue) => issue.message),
    ).toEqual([
      "client.tanstackQuery emits bindings of the generated client, but output.kinds (handlers, openapi) leaves the client out. Add 'client' to output.kinds, or set client.tanstackQuery to false.",
    ]);
    expect(validateConfig({ registrations: [], client: { tanstackQuery: true } })).toEqual([]);
    const typo = { registrations: [], client: { tanstackquery: true } };
    expect(validateConfig(typo as never).map((issue) => issue.message)).toEqual([
      "defineConfig: unknown key 'tanstackquery' (did you mean 'tanstackQuery'?) in 'client'. Known keys: baseUrl, tanstackQuery.",
    ]);
  });
});
