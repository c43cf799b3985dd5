/**
 * Job actors: asynchronous work (a call to another service, an e-mail) that a delegating state
 * runs through the durable job queue instead of a child machine. `job` on a state is an async
 * function or a `defineJob({ input, output, run })` with zod schemas; see docs/delegation.md.
 */
import type { ZodType, output as ZodOutput, input as ZodInput } from 'zod';
import type { Context } from './types.js';

/** What a job's `run` gets besides its input. */
export interface JobRunContext {
  /**
   * Fires when the delegating state is left (an event moved the instance on, `@timeout`) before
   * the job finished: stop the call; whatever it returns then is ignored.
   */
  readonly signal: AbortSignal;
  /**
   * Stable for every attempt of this one job (retries, a re-run after a crash): pass it to the
   * external service as its idempotency key so a repeated call is not a repeated charge.
   */
  readonly idempotencyKey: string;
  /** The instance whose state started the job. */
  readonly instance: { readonly machineId: string; readonly id: string };
  /** Actor of the event that entered the delegating state (`null` when none). */
  readonly actor: string | null;
  /** 1 on the first attempt. */
  readonly attempt: number;
}

/** The function a job runs: input in, output (JSON-serializable) out; a rejection is a failure. */
export type JobFunction<TInput = Context, TOutput = unknown> = (
  input: TInput,
  job: JobRunContext,
) => Promise<TOutput>;

/** A job with its name and optional zod schemas, as `defineJob` returns it. */
export interface JobDefinition<TInput = Context, TOutput = unknown> {
  readonly kind: 'job';
  /** Name in history records (`<m>.child.<name>.start`) and job rows. */
  readonly name: string | null;
  /** Parses the mapped input before `run` (a failure routes `@fail`, without retries). */
  readonly input: ZodType<TInput> | null;
  /** Parses the result (a failure routes `@fail`: the call itself succeeded, so no retry). */
  readonly output: ZodType<TOutput> | null;
  readonly run: JobFunction<TInput, TOutput>;
}

/** Options of `defineJob`. */
export interface DefineJobOptions<TInputSchema extends ZodType, TOutputSchema extends ZodType> {
  /** Name in history and job rows (default: the name of `run`, else the state's key). */
  name?: string;
  input?: TInputSchema;
  output?: TOutputSchema;
  run: (input: ZodOutput<TInputSchema>, job: JobRunContext) => Promise<ZodInput<TOutputSchema>>;
}

/**
 * A job actor with typed, validated input and output.
 *
 * @example
 * const charge = defineJob({
 *   input: z.object({ orderId: z.string(), amount: z.number() }),
 *   output: z.object({ paymentId: z.string() }),
 *   run: ({ orderId, amount }, { signal, idempotencyKey }) =>
 *     provider.charge({ orderId, amount }, { signal, idempotencyKey }),
 * });
 * // states: { charging: { job: charge, input: ['orderId', 'amount'], on: { '@done': 'paid', '@fail': 'failed' } } }
 */
export function defineJob<
  TInputSchema extends ZodType = ZodType<Context>,
  TOutputSchema extends ZodType = ZodType<unknown>,
>(
  options: DefineJobOptions<TInputSchema, TOutputSchema>,
): JobDefinition<ZodOutput<TInputSchema>, ZodOutput<TOutputSchema>> {
  const name = options.name ?? (options.run.name === '' ? null : options.run.name);
  return Object.freeze({
    kind: 'job' as const,
    name: name === 'run' ? null : name,
    input: (options.input ?? null) as ZodType<ZodOutput<TInputSchema>> | null,
    output: (options.output ?? null) as ZodType<ZodOutput<TOutputSchema>> | null,
    run: options.run as JobFunction<ZodOutput<TInputSchema>, ZodOutput<TOutputSchema>>,
  });
}

/** True for what `defineJob` returns. */
export function isJobDefinition(value: unknown): value is JobDefinition<unknown, unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { kind?: unknown }).kind === 'job' &&
    typeof (value as { run?: unknown }).run === 'function'
  );
}
