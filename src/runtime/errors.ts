/**
 * Every named exception of the specification, each with a stable `code`.
 *
 * Codes never change once released: tools and tests match on `code` (or `instanceof`), never on
 * message text. `statusCode` is the HTTP status the endpoint layer answers with when the error
 * escapes a request; build-time errors keep 500 because they never should reach a request.
 *
 * The classes live in errors/ by job; this barrel re-exports them all, so importers name this
 * file only.
 */
export * from './errors/base.js';
export * from './errors/definition.js';
export * from './errors/request.js';
export * from './errors/store.js';
export * from './errors/versioning.js';
