/**
 * The HTTP client of the benches that time requests to a router server (flow, idempotency,
 * create-or-send): node:http requests over a caller's keep-alive agent, answering status,
 * Retry-After and body text.
 */
import { type Agent, request } from 'node:http';

/** A request's answer, as the benches read it. */
export interface Answer {
  status: number;
  retryAfter: string | undefined;
  body: string;
}

/** GET `path` of `base` over `agent`. */
export function getter(base: string, agent: Agent) {
  return (path: string) =>
    new Promise<Answer>((resolve, reject) => {
      const req = request(`${base}${path}`, { method: 'GET', agent }, (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () =>
          resolve({ status: response.statusCode ?? 0, retryAfter: undefined, body: text }),
        );
      });
      req.on('error', reject);
      req.end();
    });
}

/** POST JSON `body` to `path` of `base` over `agent`. */
export function poster(base: string, agent: Agent) {
  return (path: string, body: unknown, headers: Record<string, string> = {}) =>
    new Promise<Answer>((resolve, reject) => {
      const payload = JSON.stringify(body);
      const req = request(
        `${base}${path}`,
        {
          method: 'POST',
          agent,
          headers: {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(payload),
            ...headers,
          },
        },
        (response) => {
          let text = '';
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => (text += chunk));
          response.on('end', () =>
            resolve({
              status: response.statusCode ?? 0,
              retryAfter: response.headers['retry-after'] as string | undefined,
              body: text,
            }),
          );
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
}

/** POST JSON as {@link poster} does; a status of 300 or more rejects, else the parsed body. */
export function jsonPoster(base: string, agent: Agent) {
  const post = poster(base, agent);
  return async (path: string, body: unknown, headers: Record<string, string> = {}) => {
    const answer = await post(path, body, headers);
    if (answer.status >= 300) throw new Error(`${path}: ${answer.status} ${answer.body}`);
    return JSON.parse(answer.body) as { data: { id: string } };
  };
}
