/**
 * Process-wide runtime defaults. Kept to one documented setter so tests and hosts can tune the
 * loop protection without threading options through every call.
 */

/** Options settable with `configureRuntime`. */
export interface RuntimeConfig {
  /**
   * Default `max_transition_depth` for machines that do not set their own: how many internal
   * steps (`@always`, raised and `@done` events) one event may trigger. Default 100.
   */
  maxTransitionDepth: number;
}

const DEFAULTS: RuntimeConfig = Object.freeze({ maxTransitionDepth: 100 });

let current: RuntimeConfig = DEFAULTS;

/**
 * Changes process-wide runtime defaults; omitted options keep their value. Returns the previous
 * configuration so callers (tests) can restore it.
 *
 * @example configureRuntime({ maxTransitionDepth: 50 })
 */
export function configureRuntime(options: Partial<RuntimeConfig>): RuntimeConfig {
  const previous = current;
  if (
    options.maxTransitionDepth !== undefined &&
    (!Number.isInteger(options.maxTransitionDepth) || options.maxTransitionDepth < 1)
  ) {
    throw new RangeError(
      `maxTransitionDepth must be a positive integer, got ${options.maxTransitionDepth}.`,
    );
  }
  current = Object.freeze({ ...current, ...options });
  return previous;
}

/** The current process-wide runtime configuration. */
export function getRuntimeConfig(): RuntimeConfig {
  return current;
}
