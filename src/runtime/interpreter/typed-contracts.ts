/**
 * The run-time side of typed contracts (definition/typed-contracts.ts): a child's input parsed
 * by its input schema when it starts, a failed child's typed failure. Each failure raises the
 * contract's exception naming the machine and the key.
 */
import type { MachineDefinition } from '../definition/machine-definition.js';
import { contractKeys } from '../definition/typed-contracts.js';
import type { Context } from '../definition/types.js';
import { MachineFailureResolutionException, MachineInputValidationException } from '../errors.js';
import type { ChildError } from './child-outcomes.js';

/**
 * The input a child starts with: `input` parsed by the child's typed input (defaults applied,
 * keys outside the schema kept), or `input` itself when it declares none. Throws
 * `MachineInputValidationException` naming the child, the parent and the failing keys.
 */
export function childInput(
  child: MachineDefinition,
  input: Context,
  parentMachineId: string,
): Context {
  const schema = child.typedInput ?? null;
  if (schema === null) return input;
  const parsed = schema.safeParse(input);
  if (parsed.success) return { ...input, ...(parsed.data as Context) };
  const first = parsed.error.issues[0]?.path[0];
  throw new MachineInputValidationException(
    `Child machine '${child.id}' cannot start: the input machine '${parentMachineId}' passes does not match its input schema (${describeIssues(parsed.error.issues)}). ` +
      `Fix the values the parent's 'input' passes, or the child's input schema.`,
    {
      machine: child.id,
      ...(first === undefined ? {} : { key: String(first) }),
      parent: parentMachineId,
    },
  );
}

/**
 * The typed failure of a failed child: its schema's keys taken from the error's fields (own
 * fields, then `name`, `code`, `message`) and else from the child's input; `undefined` when the
 * child declares none. Throws `MachineFailureResolutionException` when it cannot be built.
 */
export function childFailure(
  child: MachineDefinition,
  error: ChildError,
  input: Context,
): Record<string, unknown> | undefined {
  const schema = child.typedFailure ?? null;
  if (schema === null) return undefined;
  const keys = contractKeys(schema)?.all ?? [];
  const fields: Record<string, unknown> = {
    ...(error.fields ?? {}),
    name: error.name,
    code: error.code,
    message: error.message,
  };
  const source: Record<string, unknown> = {};
  for (const key of keys) {
    if (Object.hasOwn(fields, key)) source[key] = fields[key];
    else if (Object.hasOwn(input, key)) source[key] = input[key];
  }
  const parsed = schema.safeParse(source);
  if (parsed.success) return parsed.data as Record<string, unknown>;
  const first = parsed.error.issues[0]?.path[0];
  throw new MachineFailureResolutionException(
    `Child machine '${child.id}' failed ('${error.message}'), and its typed failure cannot be built from the error and its input (${describeIssues(parsed.error.issues)}). ` +
      `Throw an error carrying those fields, or make them optional in '${child.id}' failure schema.`,
    { machine: child.id, ...(first === undefined ? {} : { key: String(first) }) },
  );
}

function describeIssues(
  issues: readonly { path: readonly PropertyKey[]; message: string }[],
): string {
  return issues
    .map((issue) => `${issue.path.map(String).join('.') || '(root)'}: ${issue.message}`)
    .join('; ');
}
