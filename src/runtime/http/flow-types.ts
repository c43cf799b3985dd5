/**
 * Flow control of event routes: the `flow` registration option (key, concurrency, rate,
 * debounce, in-state limit) and a route's flow control as planned.
 */

/**
 * Where a flow-control key comes from: a request header, a field of the event's validated
 * payload, or a context key of the instance (routes bound to an instance). Requests without a
 * value share one key, `''`.
 */
export type FlowKeySource = { header: string } | { payload: string } | { context: string };

/** The flow control of one event route (the `flow` registration option). */
export interface FlowControlOptions {
  /** The key limits are counted per; default one key for the whole route. */
  key?: FlowKeySource;
  /** At most this many requests of one key are being handled at once (1 to 10000). */
  concurrency?: number;
  /** At most `limit` requests of one key per `interval` ms, as a smooth token bucket. */
  rate?: { limit: number; interval: number };
  /**
   * The last request of a burst is the one sent: each request waits `window` ms; one followed
   * by another of its key within that time is answered 429 (`limit: 'debounce'`, not to be
   * retried) and sends nothing. With `maxWait` (ms, at least `window`), a burst that never
   * pauses still sends: its latest request is sent at most `maxWait` after the burst's first
   * (as lodash's and Inngest's debounce), and the next request starts a new burst.
   */
  debounce?: { window: number; maxWait?: number };
  /**
   * At most `limit` instances of the machine in `state` (its id, `'processing'`,
   * `'review.open'`): a request is refused while that many are there. The route's admissions
   * take turns (across processes on PostgreSQL) until their send is answered, so two cannot
   * both take the last place. Counts every instance of the machine; `key` does not apply.
   */
  inState?: { state: string; limit: number };
}

/** A route's flow control, as planned (see {@link FlowControlOptions}). */
export interface RouteFlow {
  key: FlowKeySource | null;
  concurrency?: number;
  rate?: { limit: number; interval: number };
  debounce?: { window: number; maxWait?: number };
  inState?: { state: string; limit: number };
}
