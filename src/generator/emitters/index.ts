/**
 * The emitter of each output kind. `generate` picks emitters from this table by kind, so a new
 * output is one module and one entry here.
 */
import { OUTPUT_KINDS, type OutputKind } from '../config.js';
import { emitClient } from './client.js';
import { emitHandlers } from './handlers.js';
import { emitOpenApi } from './openapi.js';
import type { Emitter } from './types.js';

const EMITTERS: Readonly<Record<OutputKind, Emitter>> = {
  handlers: emitHandlers,
  openapi: emitOpenApi,
  client: emitClient,
};

export { OUTPUT_KINDS };

/** The emitter of `kind`; throws on a kind no emitter produces. */
export function emitterFor(kind: string): Emitter {
  if (!Object.hasOwn(EMITTERS, kind)) {
    throw new Error(`Unknown output kind '${kind}'. Known kinds: ${OUTPUT_KINDS.join(', ')}.`);
  }
  return EMITTERS[kind as OutputKind];
}
