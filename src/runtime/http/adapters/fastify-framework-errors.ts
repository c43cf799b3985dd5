/**
 * Fastify's framework errors answered as this package answers an unknown id: 404 `{ message }`.
 *
 * Fastify refuses some URLs before any route or error handler runs: a path that is not valid
 * percent-encoded UTF-8 (`FST_ERR_BAD_URL`, 400) and a path parameter longer than
 * `maxParamLength` (`FST_ERR_MAX_PARAM_LENGTH`, 414), each with Fastify's own
 * `{ error, code, message, statusCode }` body. Neither status nor body is in the generated
 * OpenAPI document (its error body is `{ message }`, no other key), and such a URL names no
 * machine: a client gets the documented 404 of an unknown id instead. The handler is a server
 * option (`Fastify({ frameworkErrors })`), so it is the generated application's, not the plugin's.
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { MALFORMED_URL_MESSAGE } from './shared.js';

/** Fastify error codes of URLs no route can match, answered 404. */
const UNROUTABLE: Readonly<Record<string, string>> = {
  FST_ERR_BAD_URL: MALFORMED_URL_MESSAGE,
  FST_ERR_MAX_PARAM_LENGTH: 'Not Found: a path segment of the URL is too long to name a machine.',
};

/**
 * The `frameworkErrors` option of a Fastify server mounting machine routes: unroutable URLs
 * answer 404 `{ message }`, any other framework error its own status with `{ message }`.
 *
 * @example
 * const app = Fastify({ frameworkErrors: machineRoutesFrameworkErrors });
 */
export function machineRoutesFrameworkErrors(
  error: FastifyError,
  _request: FastifyRequest,
  reply: FastifyReply,
): void {
  const unroutable = UNROUTABLE[error.code];
  if (unroutable !== undefined) {
    void reply.code(404).send({ message: unroutable });
    return;
  }
  const status = error.statusCode !== undefined && error.statusCode < 500 ? error.statusCode : 400;
  void reply.code(status).send({ message: error.message });
}
