/**
 * Flow control of an event route (the registration's `flow`, docs/http.md "Flow control"): the
 * gate a request passes after its payload is validated and before its action's `before()` and
 * its send. Debounce first (a request superseded within its window sends nothing), then the
 * rate (a token of its key's bucket), then concurrency (an in-flight slot of its key, held until
 * the answer is built). A refusal is a 429 with `Retry-After` and
 * `{ message, code: 'MR_FLOW_LIMITED', limit, retryAfter }`.
 *
 * The counters live in the store (persistence/flow-control.ts). What this process already
 * knows is answered without asking it: a key whose bucket refused until a time stays refused
 * until then (other processes can only take more tokens), and a key with `concurrency` requests
 * in flight here has no free slot anywhere; once such a refusal runs out, a flooding key's token
 * calls go to the store one at a time. A key flooding the route thus costs the store about one
 * statement per token it gets, not one per request it sends. Where the key is a header, that
 * knowledge is also offered before the request's body is read ({@link FlowGate.refusedEarly}),
 * so a flood's refusals cost its server little more than parsing their headers.
 */
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { FlowLimitedException, type FlowLimit } from '../errors.js';
import { newUlid } from '../ids.js';
import {
  MemoryFlowControl,
  type FlowControlStore,
  type FlowRate,
  type FlowTokenResult,
} from '../persistence/flow-control.js';
import { headerOf } from './conditional.js';
import type { EarlyAnswer, RawRequestHeaders } from './handler-forms.js';
import type { EndpointRequest, EndpointResponse, PlannedRoute } from './types.js';
import type { RouteFlow } from './flow-types.js';

/** What a request holds once admitted: give it back when its answer is built. */
export interface FlowTicket {
  release(): Promise<void>;
}

/** The gate of one route. */
export interface FlowGate {
  /** A ticket, or the refusal to answer. */
  admit(
    request: EndpointRequest,
    payload: unknown,
    context: unknown,
  ): Promise<FlowTicket | FlowLimitedException>;
  /**
   * The 429 of a refusal this process already knows from the headers alone (a header key whose
   * bucket refused until a later time, or with `concurrency` requests in flight here), else
   * `null`. The answer is shared by the refusals of one limit and second: not to be changed.
   * Undefined for a route whose key is not a header or that debounces (every request of a
   * burst must be seen).
   */
  refusedEarly?: (headers: RawRequestHeaders) => EndpointResponse | null;
}

/** A refusal known without the store: which limit, and for how long. */
interface KnownRefusal {
  limit: 'rate' | 'concurrency';
  retryAfterMs: number;
}

/** Early answers kept per route (one per limit and whole second: a handful in practice). */
const EARLY_ANSWERS_KEPT = 1000;

/** `Retry-After` in whole seconds, at least 1. */
function retrySeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

/** How long a slot outlives a request whose process stopped answering without dying. */
const SLOT_LEASE_MS = 60_000;
/**
 * Seconds an `instances` refusal asks to wait, and the least a concurrency refusal asks:
 * `Retry-After` counts whole seconds, and places in a state free on events this route does not
 * see.
 */
const MIN_RETRY_AFTER_S = 1;
/** Weight of the newest hold in the route's running mean of how long a slot is held. */
const HOLD_WEIGHT = 0.2;
/** Longer key values are hashed, so a row's key stays short whatever a header holds. */
const MAX_KEY_LENGTH = 128;
/** Keys of local refusals kept before the expired ones are dropped. */
const LOCAL_SWEEP_AT = 10_000;
/** How long an `inState` admission waits for its turn held by another process. */
const ADMISSION_WAIT_MS = 2_000;

/** How many instances of the route's machine are in a state, counted up to `limit`. */
export type CountInState = (state: string, limit: number) => Promise<number>;

const NO_TICKET: FlowTicket = Object.freeze({ release: async () => undefined });

/** The gate of a route with `flow`; `null` without. */
export function createFlowGate(
  route: PlannedRoute,
  store: FlowControlStore | undefined,
  countInState?: CountInState,
): FlowGate | null {
  const flow = route.flow;
  if (flow === undefined) return null;
  if (flow.inState !== undefined && countInState === undefined)
    throw new Error(
      `Route ${route.name}: flow inState needs a runtime that finds instances in a state (MachineRuntime).`,
    );
  const counters = store ?? new MemoryFlowControl();
  const scope = route.name;
  const source = describeSource(flow);
  const inState = flow.inState;
  /** Keys whose bucket refused, and until when (this process's clock). */
  const refusedUntil = new Map<string, number>();
  /** Requests of each key in flight in this process. */
  const inFlight = new Map<string, number>();
  const leaseMs = SLOT_LEASE_MS + (route.contention?.waitMs ?? 0);
  /**
   * Running mean of how long this process's requests held a slot (ms): a refused request waits
   * about that long for the next one to free. Less than a second (the usual) still says 1.
   */
  let meanHoldMs = 0;
  let holds = 0;
  const concurrencyRetryMs = (): number => Math.max(MIN_RETRY_AFTER_S * 1000, meanHoldMs);

  const refuse = (limit: FlowLimit, retryAfterMs: number | null): FlowLimitedException => {
    const seconds = retryAfterMs === null ? null : retrySeconds(retryAfterMs);
    const what =
      limit === 'instances'
        ? `${flow.inState!.limit} instances of '${route.machineId}' are in state '${flow.inState!.state}' (or another request is taking the last place); retry after ${seconds} s`
        : limit === 'debounce'
          ? `a later request of the same key${source} came within ${flow.debounce!.window} ms: it is the one sent, do not resend this one`
          : limit === 'rate'
            ? `more than ${flow.rate!.limit} requests per ${flow.rate!.interval} ms of the same key${source}; retry after ${seconds} s`
            : `${flow.concurrency} requests of the same key${source} are in flight; retry after ${seconds} s`;
    return new FlowLimitedException(
      `Route ${route.name}: ${what}. Nothing was sent.`,
      limit,
      seconds,
      { machine: route.machineId, route: route.name, limit },
    );
  };

  /** The last request of this process waiting for or holding the route's admission turn. */
  let turn: Promise<void> = Promise.resolve();
  /**
   * `inState`: room in the state, checked in turn. In this process the requests queue; across
   * processes they take the route's one admission slot, polled for up to 2 s. The turn is held
   * until the request is answered, so the next admission counts the instance it moved.
   */
  const admitInState = async (): Promise<FlowTicket | FlowLimitedException> => {
    const { state, limit } = inState!;
    const previous = turn;
    let leave!: () => void;
    turn = new Promise((resolve) => (leave = resolve));
    await previous;
    let slot = null;
    try {
      const deadline = Date.now() + ADMISSION_WAIT_MS;
      for (;;) {
        slot = await counters.acquireSlot(`${scope} inState`, '', 1, newUlid(), leaseMs);
        if (slot !== null || Date.now() >= deadline) break;
        await sleep(10 + Math.random() * 40);
      }
      if (slot !== null && (await countInState!(state, limit)) < limit) {
        const held = slot;
        return {
          release: async () => {
            try {
              await counters.releaseSlot(held);
            } finally {
              leave();
            }
          },
        };
      }
    } catch (error) {
      if (slot !== null) await counters.releaseSlot(slot).catch(() => undefined);
      leave();
      throw error;
    }
    if (slot !== null) await counters.releaseSlot(slot);
    leave();
    return refuse('instances', MIN_RETRY_AFTER_S * 1000);
  };

  /** The store's token call of each flooding key in flight in this process. */
  const tokenCalls = new Map<string, Promise<FlowTokenResult>>();
  /**
   * A token of `key`'s bucket. A key refused within its last interval is flooding: its token
   * calls go to the store one at a time from this process, the requests that come meanwhile
   * wait for that call and are refused with it when it is refused. Without this, each time a
   * flooding key's refusal ran out every request of the next round trip asked the store (on
   * PostgreSQL 1,000/s queued up to 55 queries for a pool of 10, ahead of other tenants'
   * sends). Keys never refused (within their limit) ask the store concurrently as before.
   */
  const takeToken = async (key: string, rate: FlowRate, now: number): Promise<FlowTokenResult> => {
    const until = refusedUntil.get(key);
    if (until === undefined || now - until > rate.interval)
      return counters.takeToken(scope, key, rate);
    for (let pending = tokenCalls.get(key); pending !== undefined; pending = tokenCalls.get(key)) {
      const earlier = await pending;
      if (!earlier.granted) return earlier;
    }
    const call = counters.takeToken(scope, key, rate);
    tokenCalls.set(key, call);
    try {
      return await call;
    } finally {
      if (tokenCalls.get(key) === call) tokenCalls.delete(key);
    }
  };

  /** What this process knows of `key` without asking the store: a refusal, or `null`. */
  const knownRefusal = (key: string): KnownRefusal | null => {
    if (flow.rate !== undefined) {
      const until = refusedUntil.get(key);
      if (until !== undefined) {
        const left = until - Date.now();
        if (left > 0) return { limit: 'rate', retryAfterMs: left };
      }
    }
    if (flow.concurrency !== undefined && (inFlight.get(key) ?? 0) >= flow.concurrency)
      return { limit: 'concurrency', retryAfterMs: concurrencyRetryMs() };
    return null;
  };

  const admit = async (
    request: EndpointRequest,
    payload: unknown,
    context: unknown,
  ): Promise<FlowTicket | FlowLimitedException> => {
    const key = keyOf(flow, request, payload, context);
    if (flow.debounce !== undefined) {
      const owner = newUlid();
      const elapsed = await counters.markLatest(scope, key, owner);
      const { window, maxWait } = flow.debounce;
      // maxWait: the burst's latest goes when its first has waited that long, later ones or not.
      await sleep(
        maxWait === undefined ? window : Math.max(0, Math.min(window, maxWait - elapsed)),
      );
      if (!(await counters.takeLatest(scope, key, owner))) return refuse('debounce', null);
    }
    // Before the store: a refusal known here takes no token and costs no round trip.
    const known = knownRefusal(key);
    if (known !== null) return refuse(known.limit, known.retryAfterMs);
    if (flow.rate !== undefined) {
      const now = Date.now();
      const token = await takeToken(key, flow.rate, now);
      if (!token.granted) {
        if (refusedUntil.size >= LOCAL_SWEEP_AT)
          for (const [other, time] of refusedUntil) if (time <= now) refusedUntil.delete(other);
        refusedUntil.set(key, Date.now() + token.retryAfterMs);
        return refuse('rate', token.retryAfterMs);
      }
    }
    const admitted = flow.inState === undefined ? NO_TICKET : await admitInState();
    if (admitted instanceof FlowLimitedException) return admitted;
    const limit = flow.concurrency;
    if (limit === undefined) return admitted;
    const local = inFlight.get(key) ?? 0;
    if (local >= limit) {
      await admitted.release();
      return refuse('concurrency', concurrencyRetryMs());
    }
    inFlight.set(key, local + 1);
    const since = Date.now();
    const done = (): void => {
      const left = (inFlight.get(key) ?? 1) - 1;
      if (left <= 0) inFlight.delete(key);
      else inFlight.set(key, left);
    };
    let slot;
    try {
      slot = await counters.acquireSlot(scope, key, limit, newUlid(), leaseMs);
    } catch (error) {
      done();
      await admitted.release();
      throw error;
    }
    if (slot === null) {
      done();
      await admitted.release();
      return refuse('concurrency', concurrencyRetryMs());
    }
    return {
      release: async () => {
        done();
        const held = Date.now() - since;
        meanHoldMs = holds === 0 ? held : meanHoldMs + (held - meanHoldMs) * HOLD_WEIGHT;
        holds += 1;
        try {
          await counters.releaseSlot(slot);
        } finally {
          await admitted.release();
        }
      },
    };
  };

  const header = flow.key !== null && 'header' in flow.key ? flow.key.header : null;
  const earlyAnswers = new Map<string, EndpointResponse>();
  if (header === null || flow.debounce !== undefined) return { admit };
  return {
    admit,
    refusedEarly: (headers) => {
      const raw = headers[header];
      const value = Array.isArray(raw) ? raw.join(', ') : raw;
      const known = knownRefusal(value === undefined ? '' : shortKey(value));
      if (known === null) return null;
      // The answer depends on the limit and the whole seconds only: made once for each, as a
      // flood repeats them (no exception, no stack trace, no message per request).
      const seconds = retrySeconds(known.retryAfterMs);
      const id = `${known.limit} ${seconds}`;
      let answer = earlyAnswers.get(id);
      if (answer === undefined) {
        if (earlyAnswers.size >= EARLY_ANSWERS_KEPT) earlyAnswers.clear();
        answer = flowLimitedResponse(refuse(known.limit, known.retryAfterMs));
        earlyAnswers.set(id, answer);
      }
      return answer;
    },
  };
}

/**
 * The early answer (handler-forms.ts `withEarlyAnswer`) of a route's gate: its refusal known from
 * the headers, before the body is read; `undefined` when the gate has none. Not for a request
 * with an Idempotency-Key the route honours (its replay is due whatever the limits say now),
 * nor for HEAD, which sends nothing.
 */
export function earlyFlowRefusal(
  route: PlannedRoute,
  gate: FlowGate | null,
): EarlyAnswer | undefined {
  const refusedEarly = gate?.refusedEarly;
  if (refusedEarly === undefined) return undefined;
  const idempotent = route.idempotency !== undefined;
  return (method, headers) => {
    if (method === 'HEAD' || (idempotent && headers['idempotency-key'] !== undefined)) return null;
    return refusedEarly(headers);
  };
}

/** The 429 of a refusal: `Retry-After` (but for debounce) and the typed body. */
export function flowLimitedResponse(error: FlowLimitedException): EndpointResponse {
  return {
    status: 429,
    body: {
      message: error.message,
      code: error.code,
      limit: error.limit,
      retryAfter: error.retryAfter,
    },
    ...(error.retryAfter === null ? {} : { headers: { 'retry-after': String(error.retryAfter) } }),
  };
}

/**
 * The request's key: its header, payload field or context key as text; `''` without one. The
 * value is not echoed in answers (a context value may be one the route's output hides).
 */
function keyOf(
  flow: RouteFlow,
  request: EndpointRequest,
  payload: unknown,
  context: unknown,
): string {
  const source = flow.key;
  if (source === null) return '';
  const value =
    'header' in source
      ? headerOf(request, source.header)
      : fieldOf(
          'payload' in source ? payload : context,
          'payload' in source ? source.payload : source.context,
        );
  return value === undefined ? '' : shortKey(value);
}

function shortKey(value: string): string {
  return value.length <= MAX_KEY_LENGTH
    ? value
    : `sha256:${createHash('sha256').update(value).digest('base64url')}`;
}

function fieldOf(value: unknown, field: string): string | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const found: unknown = (value as Record<string, unknown>)[field];
  return typeof found === 'string' || typeof found === 'number' || typeof found === 'boolean'
    ? String(found)
    : undefined;
}

function describeSource(flow: RouteFlow): string {
  const source = flow.key;
  if (source === null) return '';
  if ('header' in source) return ` (header ${source.header})`;
  if ('payload' in source) return ` (payload ${source.payload})`;
  return ` (context ${source.context})`;
}
