/**
 * The answer of a request that meets the runtime while it shuts down: 503 `{ message }` with
 * `Retry-After`, the shape the OpenAPI document gives every operation (`ServiceUnavailable`).
 */
import { describe, expect, it } from 'vitest';
import { RuntimeClosedException } from '../../../src/runtime/errors.js';
import { errorToResponse } from '../../../src/runtime/http/responses.js';

describe('the shutdown answer', () => {
  it('should be 503 { message } with Retry-After in seconds', () => {
    const logged: unknown[] = [];
    const response = errorToResponse(
      new RuntimeClosedException('The runtime is closed: no instance can be watched.'),
      { error: (message) => logged.push(message) },
      'order.events',
    );
    expect(response).toEqual({
      status: 503,
      body: { message: 'The runtime is closed: no instance can be watched.' },
      headers: { 'retry-after': '1' },
    });
    expect(logged).toEqual([]);
  });
});
