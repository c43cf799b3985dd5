/**
 * The payload check of an operator's send (`MachineOperations.send`, hence the CLI's
 * `instances send` and the admin route): the event's own schema, as its endpoint would check a
 * request's body, so an operator's typo never reaches the context.
 */
import { MachineValidationException, type FieldErrors } from '../../errors.js';
import type { MachineDefinition } from '../../definition/machine-definition.js';
import type { EventObject } from '../../definition/types.js';

/**
 * `event` with its payload as its schema parses it (defaults filled in). Without a schema any
 * object, or none, passes unchanged. `MachineValidationException` (422, `errors` keyed
 * `payload.<field>`) naming the machine, the event and the field otherwise.
 */
export async function checkedOperatorEvent<E extends Omit<EventObject, 'actor'>>(
  definition: MachineDefinition,
  event: E,
): Promise<E> {
  const schema = definition.events.get(event.type)?.payload;
  const payload: unknown = event.payload;
  if (schema === undefined) {
    if (payload === undefined || payload === null || isRecord(payload)) return event;
    throw refusal(definition, event.type, { payload: ['The payload must be an object.'] });
  }
  const parsed = await schema.safeParseAsync(payload ?? {});
  if (parsed.success) return { ...event, payload: parsed.data };
  const errors: FieldErrors = {};
  for (const issue of parsed.error.issues) {
    const key = ['payload', ...issue.path.map(String)].join('.');
    (errors[key] ??= []).push(issue.message);
  }
  throw refusal(definition, event.type, errors);
}

function refusal(
  definition: MachineDefinition,
  type: string,
  errors: FieldErrors,
): MachineValidationException {
  const [field, messages] = Object.entries(errors)[0]!;
  return new MachineValidationException(
    `${field}: ${messages[0]!} (event '${type}' of machine '${definition.id}'): send a payload its schema accepts.`,
    errors,
    { machine: definition.id, key: field },
  );
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
