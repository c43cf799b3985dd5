/**
 * A frontend using the example's generated client the way strict code does: optional values
 * that may be missing, narrowing on `status`. Compiled by client-strictness.test.ts under
 * `strict` and under the @tsconfig/strictest settings (exactOptionalPropertyTypes).
 */
import { MutationObserver, type QueryClient } from '@tanstack/query-core';
import {
  createClient,
  isResponseError,
  type ClientResponse,
  type Credentials,
  type OrderApproveResult,
  type OrderSubmitResult,
  type ResponseErrorOf,
} from '../../../generated-example/client.gen.js';
import { createQueries, type MutationError } from '../../../generated-example/query.gen.js';

export async function submitOrder(
  baseUrl: string,
  amount: number,
  note: string | undefined,
  signal: AbortSignal | undefined,
): Promise<string> {
  const client = createClient({ baseUrl, auth: () => undefined });
  const created = await client.order.create({ signal });
  if (created.status !== 201) return 'not created';
  const machineId = created.body.data.id;
  const payload = note === undefined ? { amount } : { amount, note };
  const submitted = await client.order.submit({ machineId, payload }, { signal, headers: {} });
  const quoted = await client.order.quote({ machineId, payload: { quantity: 2 } });
  const answers: ClientResponse<number, unknown>[] = [submitted, quoted];
  return submitted.status === 200
    ? submitted.body.data.state.join(',')
    : `${answers.length} answers, last ${submitted.status}`;
}

/** Throwing on errors: the methods' types hold the 2xx answers only, errors are typed by route. */
export async function approveOrder(
  baseUrl: string,
  machineId: string,
  credentials: Credentials | undefined,
): Promise<string> {
  const client = createClient({ baseUrl, throwOnError: true, retryOnLocked: { retries: 5 } });
  try {
    const approved = await client.order.approve(
      { machineId },
      { credentials, fetch: globalThis.fetch, retryOnLocked: undefined },
    );
    return approved.body.data.state.join(',');
  } catch (caught) {
    // What a TanStack mutation of this route reports as its error.
    const error = caught as ResponseErrorOf<OrderApproveResult> | Error;
    // A 422 without `errors` (a scenario that does not apply) has no field at fault.
    if (isResponseError(error) && error.status === 422)
      return 'errors' in error.body ? Object.keys(error.body.errors).join(',') : error.body.message;
    if (isResponseError(caught)) return `answered ${caught.status}`;
    throw caught;
  }
}

/**
 * A catch clause's `unknown`, narrowed without a cast: by status, the body is the message, the
 * field errors (422) or the instance's state (423). Interceptors add a tracing header and refresh
 * a token on 401.
 */
export async function cancelOrder(baseUrl: string, machineId: string): Promise<string> {
  let token = 'stale';
  const client = createClient({
    baseUrl,
    throwOnError: true,
    interceptors: [
      {
        request: (request) => {
          request.headers['authorization'] = `Bearer ${token}`;
          request.headers['traceparent'] = `00-${'1'.repeat(32)}-${'2'.repeat(16)}-01`;
        },
        response: (response) => {
          if (response.status !== 401) return undefined;
          token = 'fresh';
          return 'retry';
        },
      },
    ],
  });
  try {
    return (await client.order.cancel({ machineId })).body.data.state.join(',');
  } catch (error) {
    if (!isResponseError(error)) throw error;
    if (error.status === 422) return Object.keys(error.body.errors ?? {}).join(',');
    if (error.status === 423) return error.body.data.state.join(',');
    return error.body.message;
  }
}

/** The TanStack Query bindings as a strict frontend uses them, through query-core alone. */
export async function orderStateThroughQueries(
  queryClient: QueryClient,
  baseUrl: string,
  machineId: string,
): Promise<string> {
  const queries = createQueries(createClient({ baseUrl }), queryClient);
  const envelope = await queryClient.fetchQuery(queries.order.instance({ machineId }));
  const fieldErrors: string[] = [];
  const submit = new MutationObserver(queryClient, {
    ...queries.order.submit({ credentials: 'include', retryOnLocked: true }),
    onError: (error) => {
      if (isResponseError(error) && error.status === 422 && 'errors' in error.body)
        fieldErrors.push(...Object.keys(error.body.errors));
    },
  });
  const submitted = await submit.mutate({ machineId, payload: { amount: 1 } });
  const cached = queryClient.getQueryData(queries.order.instance({ machineId }).queryKey);
  const summary = await queryClient.fetchQuery(queries.order.read.summary({ machineId }));
  return [
    ...envelope.data.state,
    ...submitted.data.state,
    ...(cached?.data.state ?? []),
    ...summary.data.state,
    ...fieldErrors,
  ].join(',');
}

/**
 * A mutation's `onError`, narrowed by `status` alone once `isResponseError` says it is an answer:
 * every documented status of SUBMIT has a case and the body type of that status, and the
 * `never` of the default proves the union holds no other (a status added to or dropped from
 * the route's documentation fails this file's compilation). No casts.
 */
export function submitFailure(error: MutationError<OrderSubmitResult>): string {
  if (!isResponseError(error)) return `no answer: ${error.message}`;
  switch (error.status) {
    case 400:
    case 404:
    case 409:
    case 413:
    case 415:
    case 500:
    case 503:
      return error.body.message;
    case 412:
      // PreconditionFailedResponse: the version the order is at now.
      return error.body.etag ?? 'no machine yet';
    case 422:
      return 'errors' in error.body ? Object.keys(error.body.errors).join(',') : error.body.message;
    case 423:
      return error.body.data.isProcessing ? 'busy' : 'free';
    default: {
      const undocumented: never = error;
      return undocumented;
    }
  }
}

/** The same through the bindings: `onError` of `queries.order.submit()` gets that union. */
export function submitWithTypedErrors(queryClient: QueryClient, baseUrl: string): string[] {
  const seen: string[] = [];
  const queries = createQueries(createClient({ baseUrl }), queryClient);
  new MutationObserver(queryClient, {
    ...queries.order.submit(),
    onError: (error) => {
      seen.push(submitFailure(error));
      // @ts-expect-error 418 is no status SUBMIT documents: the comparison cannot be true.
      if (isResponseError(error) && error.status === 418) seen.push('teapot');
    },
  });
  return seen;
}
