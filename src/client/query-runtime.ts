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
  type RequestOptions,
  type ResponseErrorOf,
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
