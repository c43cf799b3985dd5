/**
 * A payload for a generated path test's client event, made from the event's zod schema: its
 * JSON Schema (`z.toJSONSchema`) sampled by the generator's example builder (the schema's own
 * `examples` first, else the smallest value its keywords allow), then checked by the zod schema
 * itself, so a refinement or a pattern the sample misses is reported, not sent.
 */
import { z, type ZodType } from 'zod';
import { examplePayload } from '../generator/example-payload.js';
import type { JsonSchema } from '../generator/manifest.js';

/** A payload, none needed (the event has no schema), or why none could be made. */
export type SchemaPayload =
  | { kind: 'payload'; payload: Record<string, unknown> }
  | { kind: 'unneeded' }
  | { kind: 'none'; reason: string };

/** The payload of an event whose payload schema is `schema` (undefined: the event has none). */
export function schemaPayload(schema: ZodType | undefined): SchemaPayload {
  if (schema === undefined) return { kind: 'unneeded' };
  let sample: unknown;
  try {
    const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
    sample = examplePayload(json);
  } catch (error) {
    return { kind: 'none', reason: `no example of its schema: ${(error as Error).message}` };
  }
  const checked = schema.safeParse(sample);
  if (!checked.success)
    return {
      kind: 'none',
      reason: `the example ${JSON.stringify(sample)} fails its schema: ${checked.error.issues.map((issue) => issue.message).join('; ')}`,
    };
  if (typeof sample !== 'object' || sample === null || Array.isArray(sample))
    return { kind: 'none', reason: `its schema is not an object (${JSON.stringify(sample)})` };
  return { kind: 'payload', payload: sample as Record<string, unknown> };
}
