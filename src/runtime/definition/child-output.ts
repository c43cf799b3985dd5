/**
 * Output behaviors of forwarded endpoints that read the child machine's output (the spec's
 * "an output behavior may type-hint the child machine's typed output class"). TypeScript has no
 * parameter injection, so the requirement is declared by wrapping the behavior in
 * `defineChildOutput`: the runtime then checks that the child defines an output, at definition
 * time when the child is known and otherwise when the endpoint answers
 * (MachineOutputInjectionException).
 */
import type { Context } from './types.js';
import type { BehaviorArgs } from './behavior-types.js';

/** The child machine as a forwarded endpoint's output behavior sees it. */
export interface ChildOutputView<TOutput = unknown> {
  /** Definition id of the child. */
  machineId: string;
  /** Instance id of the child. */
  id: string;
  /** Active state ids of the child. */
  state: readonly string[];
  /** The child's context with its computed values. */
  context: Context;
  /** The child's output: its current state's `output` (final states included), resolved. */
  output: TOutput;
}

/** What an output behavior made with `defineChildOutput` receives: the parent's args plus the child. */
export interface ChildOutputArgs<
  TContext extends Context = Context,
  TOutput = unknown,
> extends BehaviorArgs<TContext> {
  child: ChildOutputView<TOutput>;
}

const CHILD_OUTPUT = Symbol.for('machine-routes.childOutput');

/** An output behavior that requires the child's output. Usable wherever an output is. */
export type ChildOutputFunction<TContext extends Context = Context, TOutput = unknown> = ((
  args: BehaviorArgs<TContext>,
) => unknown) & {
  readonly [CHILD_OUTPUT]: (args: ChildOutputArgs<TContext, TOutput>) => unknown;
};

/**
 * Declares a forwarded endpoint's output behavior that reads the child's output
 * (`args.child.output`, typed `TOutput`). The child must define an `output` on its states:
 * defineMachine throws MachineOutputInjectionException when it defines none, and the endpoint
 * throws it when the child's current state resolves none.
 *
 * @example
 * const receipt = defineChildOutput<Ctx, { cardLast4: string }>(({ context, child }) => ({
 *   orderId: context.orderId,
 *   card: child.output.cardLast4,
 * }));
 * forward: [{ PROVIDE_CARD: { output: receipt } }]
 */
export function defineChildOutput<TContext extends Context = Context, TOutput = unknown>(
  run: (args: ChildOutputArgs<TContext, TOutput>) => unknown,
): ChildOutputFunction<TContext, TOutput> {
  // Called without a child (as a plain state output) it has nothing to read.
  const plain = (args: BehaviorArgs<TContext>): unknown => {
    const child = (args as Partial<ChildOutputArgs<TContext, TOutput>>).child;
    if (child === undefined) {
      throw new TypeError(
        `Output behavior '${run.name || 'anonymous'}' reads the child machine's output: use it on a forwarded endpoint.`,
      );
    }
    return run(args as ChildOutputArgs<TContext, TOutput>);
  };
  Object.defineProperty(plain, 'name', { value: run.name || 'childOutput' });
  Object.defineProperty(plain, CHILD_OUTPUT, { value: run });
  return plain as ChildOutputFunction<TContext, TOutput>;
}

/** True for an output behavior made by `defineChildOutput`. */
export function requiresChildOutput(run: unknown): boolean {
  return typeof run === 'function' && CHILD_OUTPUT in run;
}
