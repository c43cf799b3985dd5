/**
 * The autocannon request of the benches that spread load over instances: each request takes the
 * next path in turn, so with more instances than connections no two in-flight requests meet on
 * one instance (no lock contention in a figure meant to measure the common path).
 */
import type autocannon from 'autocannon';

/**
 * A request whose path is `pathAt(n)` for the n-th request sent (from 0); a POST of `body` as
 * JSON when one is given, else a GET.
 */
export function rotatingRequest(pathAt: (n: number) => string, body?: string): autocannon.Request {
  let next = 0;
  const setupRequest = (request: autocannon.Request): autocannon.Request => ({
    ...request,
    path: pathAt(next++),
  });
  return body === undefined
    ? { method: 'GET', setupRequest }
    : { method: 'POST', headers: { 'content-type': 'application/json' }, body, setupRequest };
}
