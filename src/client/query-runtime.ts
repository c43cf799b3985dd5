/**
 * The runtime of the generated TanStack Query bindings (`query.gen.ts`, opt-in with the
 * config's `client.tanstackQuery`). `generate` emits a copy beside them
 * (`query-runtime.gen.ts`).
 *
 * It imports types only from `@tanstack/query-core`, never a framework adapter: the bindings
 * are plain option objects (`{ queryKey, queryFn }`, `{ mutationKey, mutationFn }`) that
 * `useQuery`/`useMutation` of React, Vue, Solid, Svelte or Angular take as they are, and
 * that `queryClient.fetchQuery` or a `MutationObserver` take without any adapter.
 *
 * The cache writes live in `mutationFn` and `queryFn`, not in `onSuccess`, so that spreading
 * the options and adding callbacks of your own (`{ ...queries.order.submit(), onSuccess }`)
 * keeps them.
 */
import type { DataTag, MutationOptions, QueryClient } from '@tanstack/query-core';
import {
  ClientResponseError,
  UnexpectedResponseError,
  type RequestOptions,
  type ResponseErrorOf,
  type StreamMethod,
  type SuccessOf,
} from './runtime.js';

/** First element of every key the bindings make: `[QUERY_ROOT]` matches all of them. */
export const QUERY_ROOT = 'machine-routes';

/** The body of a route's 2xx answers: what its query or mutation resolves with. */
export type BodyOf<TResult> = SuccessOf<TResult> extends { body: infer TBody } ? TBody : never;

/**
 * What a mutation of a route fails with: a {@link ClientResponseError} per documented error
 * status of the route (narrow with `isResponseError(error) && error.status === 422`), or what
 * `fetch` throws (network failure, abort) and `UnexpectedResponseError`.
 */
export type MutationError<TResult> = ResponseErrorOf<TResult> | Error;

/** Path parameters naming an instance: `{ machineId }`, or a model's (`{ invoice }`). */
export type InstanceParams = Readonly<Record<string, string>>;

/** Key prefix of everything cached about one instance: its envelope and its reads. */
export type InstanceKey<TParams extends InstanceParams> = readonly [
  typeof QUERY_ROOT,
  string,
  TParams,
];

/** Options of a query the bindings make: usable by `useQuery` and `queryClient.fetchQuery`. */
export interface BoundQuery<TData, TKey extends readonly unknown[]> {
  /** Tagged with the data type, so `queryClient.getQueryData(key)` is typed. */
  queryKey: DataTag<TKey, TData>;
  queryFn: (context: { signal: AbortSignal }) => Promise<TData>;
  /** Retries network failures and 5xx answers up to three times, never a 4xx answer. */
  retry: (failureCount: number, error: Error) => boolean;
}

/**
 * The instance query of a registration without reads: nothing can fetch the envelope, so it
 * is disabled and holds what the instance's mutations wrote (its `queryFn`, there for the data
 * type, rejects if it is ever forced to run).
 */
export interface CachedQuery<TData, TKey extends readonly unknown[]> extends BoundQuery<
  TData,
  TKey
> {
  enabled: false;
}

/** Options of a mutation the bindings make: usable by `useMutation` and `MutationObserver`. */
export interface BoundMutation<TData, TError, TVariables> extends MutationOptions<
  TData,
  TError,
  TVariables
> {
  mutationKey: readonly [typeof QUERY_ROOT, string];
  mutationFn: (variables: TVariables) => Promise<TData>;
}

/** Options of a live query (`live(params, options?)`). */
export interface LiveOptions {
  /** Headers of the stream's request, sent after (and over) the client's. */
  headers?: Record<string, string>;
  /**
   * Reconnection after a lost connection: at most `retries` tries in a row (default: no bound,
   * as an `EventSource`), pausing `min(maxDelay, delay * 2^n)` ms before try `n`, the second half
   * drawn at random (defaults 500 and 15000). A message received starts the count again.
   */
  reconnect?: { retries?: number; delay?: number; maxDelay?: number };
}

/**
 * Options of a live query: usable by `useQuery` and `QueryObserver` (not by `fetchQuery`, which
 * would wait for the stream to end). Its data is the stream's last message.
 */
export interface LiveQuery<TData, TKey extends readonly unknown[]> {
  queryKey: DataTag<TKey, TData>;
  queryFn: (context: { signal: AbortSignal }) => Promise<TData>;
  /** The query reconnects by itself; a failure it gives up on is final. */
  retry: false;
  /** Fresh for ever once the instance is final (nothing will change); stale otherwise. */
  staleTime: (query: { queryKey: readonly unknown[] }) => number;
}

/** What every client method resolves with (`ClientResponse`). */
type Answer = { ok: boolean; status: number; body: unknown };

/** A client method called with `throwOnError: true`: resolves with 2xx answers only. */
type Call<TInput, TResult extends Answer> = (
  input: TInput,
  options: RequestOptions & { throwOnError: true },
) => Promise<SuccessOf<TResult>>;

type CallWithoutInput<TResult extends Answer> = (
  options: RequestOptions & { throwOnError: true },
) => Promise<SuccessOf<TResult>>;

const retry = (failureCount: number, error: Error): boolean =>
  failureCount < 3 && !(error instanceof ClientResponseError && error.status < 500);

/**
 * Whether a live query reconnects after `error`: a network failure (fetch throws a `TypeError`,
 * also when a connection breaks mid-stream), a 5xx (503 while a server drains), 408 or 429. Any
 * other answer (404 unknown instance, 401) will not change by asking again.
 */
const reconnects = (error: unknown): boolean =>
  error instanceof UnexpectedResponseError
    ? error.status >= 500 || error.status === 408 || error.status === 429
    : error instanceof TypeError;

/** Resolves after `ms`, or at once when `signal` aborts. */
const pause = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });

/**
 * The binding factories `query.gen.ts` builds its table with, over one `QueryClient`.
 * `machine` is the definition id: every registration of a machine shares its instances' cache
 * entries (two prefixes over one machine address the same instances). It is `null` for
 * stateless routes, which have no instance to cache.
 */
export function queryBindings(queryClient: QueryClient) {
  const keyOf = <TParams extends InstanceParams>(
    machine: string,
    params: TParams,
  ): InstanceKey<TParams> => [QUERY_ROOT, machine, params];

  const pick = (input: unknown, names: readonly string[]): InstanceParams =>
    Object.fromEntries(
      names.map((name) => [name, String((input as Record<string, unknown>)[name])]),
    );

  /** Writes an envelope to the instance entry; its reads are stale now, so they refetch. */
  function remember(machine: string, params: InstanceParams, body: unknown): void {
    queryClient.setQueryData([...keyOf(machine, params), 'instance'], body);
    void queryClient.invalidateQueries({ queryKey: [...keyOf(machine, params), 'read'] });
  }

  /** Live queries whose stream ended at a final state (by key): nothing will change them. */
  const finished = new Set<string>();

  /** A refused event (409) means the cached state is stale: everything of the instance refetches. */
  function forget(machine: string, params: InstanceParams, error: unknown): void {
    if (error instanceof ClientResponseError && error.status === 409)
      void queryClient.invalidateQueries({ queryKey: keyOf(machine, params) });
  }

  return {
    /** `key(params)`: the key prefix of one instance, for `invalidateQueries`/`removeQueries`. */
    key:
      <TParams extends InstanceParams>(machine: string) =>
      (params: TParams): InstanceKey<TParams> =>
        keyOf(machine, params),

    /** `instance(params, options?)`: the instance's last envelope, fetched with `read`. */
    instance:
      <TParams extends InstanceParams, TData, TResult extends Answer>(
        machine: string,
        read: Call<TParams, TResult>,
      ) =>
      (
        params: TParams,
        options: RequestOptions = {},
      ): BoundQuery<TData, readonly [...InstanceKey<TParams>, 'instance']> => ({
        queryKey: [...keyOf(machine, params), 'instance'] as unknown as DataTag<
          readonly [...InstanceKey<TParams>, 'instance'],
          TData
        >,
        queryFn: async ({ signal }) =>
          (await read(params, { ...options, signal, throwOnError: true })).body as TData,
        retry,
      }),

    /** `instance(params)` of a registration without reads: filled by its mutations only. */
    cachedInstance:
      <TParams extends InstanceParams, TData>(machine: string) =>
      (params: TParams): CachedQuery<TData, readonly [...InstanceKey<TParams>, 'instance']> => ({
        queryKey: [...keyOf(machine, params), 'instance'] as unknown as DataTag<
          readonly [...InstanceKey<TParams>, 'instance'],
          TData
        >,
        queryFn: () =>
          Promise.reject(
            new Error(
              `No read fetches a ${machine} instance: its entry holds what its mutations wrote. Register \`reads\` to fetch it.`,
            ),
          ),
        retry,
        enabled: false,
      }),

    /** `read.<name>(input, options?)`: one read of the instance, as a query. */
    read:
      <TInput extends InstanceParams, TResult extends Answer>(
        machine: string,
        route: string,
        call: Call<TInput, TResult>,
      ) =>
      (
        input: TInput,
        options: RequestOptions = {},
      ): BoundQuery<BodyOf<TResult>, readonly [...InstanceKey<TInput>, 'read', string]> => ({
        queryKey: [...keyOf(machine, input), 'read', route] as unknown as DataTag<
          readonly [...InstanceKey<TInput>, 'read', string],
          BodyOf<TResult>
        >,
        queryFn: async ({ signal }) =>
          (await call(input, { ...options, signal, throwOnError: true })).body as BodyOf<TResult>,
        retry,
      }),

    /**
     * `<event>(options?)`: a mutation sending the event; its answer's envelope becomes the
     * instance entry (`params`: the path parameters naming the instance; `machine` null for
     * a stateless route).
     */
    event:
      <TInput, TResult extends Answer>(
        machine: string | null,
        route: string,
        params: readonly string[],
        call: Call<TInput, TResult>,
      ) =>
      (
        options: RequestOptions = {},
      ): BoundMutation<BodyOf<TResult>, MutationError<TResult>, TInput> => ({
        mutationKey: [QUERY_ROOT, route],
        mutationFn: async (input) => {
          try {
            const { body } = await call(input, { ...options, throwOnError: true });
            if (machine !== null) remember(machine, pick(input, params), body);
            return body as BodyOf<TResult>;
          } catch (error) {
            if (machine !== null) forget(machine, pick(input, params), error);
            throw error;
          }
        },
      }),

    /**
     * `live(params, options?)`: a query following the instance's state stream (`subscribe`).
     * Each message becomes its data and the instance entry (every observer of `instance`
     * updates without a refetch), and the instance's reads are invalidated (watched ones
     * refetch). The stream runs while the query has observers: their last unsubscribe aborts it.
     * A lost connection (network failure, 5xx, 408, 429) reconnects with backoff, resuming after
     * the last sequence seen (`Last-Event-ID`); any other 4xx (404, 401) fails the query. When
     * the server ends the stream, one reconnection asks for newer states: none means the
     * instance is final, and the query ends with its last state (and stays fresh).
     */
    live:
      <TParams extends InstanceParams, TMessage>(
        machine: string,
        subscribe: StreamMethod<TParams, TMessage>,
      ) =>
      (
        params: TParams,
        options: LiveOptions = {},
      ): LiveQuery<TMessage, readonly [...InstanceKey<TParams>, 'live']> => {
        const queryKey = [...keyOf(machine, params), 'live'] as const;
        const { retries = Infinity, delay = 500, maxDelay = 15_000 } = options.reconnect ?? {};
        return {
          queryKey: queryKey as unknown as DataTag<
            readonly [...InstanceKey<TParams>, 'live'],
            TMessage
          >,
          queryFn: async ({ signal }) => {
            let latest: { message: TMessage; sequence: number } | undefined;
            let failures = 0;
            for (;;) {
              let received = false;
              try {
                await subscribe(params, {
                  signal,
                  ...(latest === undefined ? {} : { lastEventId: latest.sequence }),
                  ...(options.headers === undefined ? {} : { headers: options.headers }),
                  onState: (message, sequence) => {
                    latest = { message, sequence };
                    received = true;
                    failures = 0;
                    queryClient.setQueryData(queryKey, message);
                    remember(machine, params, message);
                  },
                });
                if (signal.aborted) break;
                // Ended by the server: a final state, or a server closing. A reconnection after
                // the last sequence tells them apart (a final instance ends it at once, empty).
                if (!received) {
                  if (latest === undefined)
                    throw new Error(`The ${machine} state stream ended without a state.`);
                  finished.add(JSON.stringify(queryKey));
                  return latest.message;
                }
              } catch (error) {
                if (signal.aborted) break;
                if (!reconnects(error) || failures >= retries) throw error;
                const ceiling = Math.min(maxDelay, delay * 2 ** failures);
                failures += 1;
                await pause(ceiling / 2 + Math.random() * (ceiling / 2), signal);
              }
            }
            // Aborted (no observer left): what it had, if anything; the query discards it.
            return latest?.message as TMessage;
          },
          retry: false,
          staleTime: (query) => (finished.has(JSON.stringify(query.queryKey)) ? Infinity : 0),
        };
      },

    /** `create(options?)`: a mutation creating an instance, whose envelope starts its entry. */
    create:
      <TResult extends Answer>(machine: string, route: string, call: CallWithoutInput<TResult>) =>
      (
        options: RequestOptions = {},
      ): BoundMutation<BodyOf<TResult>, MutationError<TResult>, void> => ({
        mutationKey: [QUERY_ROOT, route],
        mutationFn: async () => {
          const { body } = await call({ ...options, throwOnError: true });
          const id = (body as { data: { id: string } }).data.id;
          remember(machine, { machineId: id }, body);
          return body as BodyOf<TResult>;
        },
      }),
  };
}
