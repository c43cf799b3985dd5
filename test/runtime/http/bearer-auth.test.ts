/**
 * The example's bearer middleware: people copy examples, so it must treat a token as data,
 * never reach inherited object members (`__proto__`, `constructor`, `toString`).
 */
import { describe, expect, it } from 'vitest';
import { bearerAuth } from '../../../fixtures/example/auth.js';
import type { EndpointRequest } from '../../../src/runtime/http/types.js';

const auth = bearerAuth({ 'staff-token': ['api', 'admin'] });

function request(authorization: string | undefined): EndpointRequest {
  return { method: 'POST', params: {}, query: {}, body: undefined, headers: { authorization } };
}

describe('bearerAuth (fixtures/example/auth.ts)', () => {
  it('should accept a token issued for the guard', async () => {
    expect(await auth(request('Bearer staff-token'), ['admin'])).toBeUndefined();
  });

  it.each([
    '__proto__',
    'constructor',
    'toString',
    'hasOwnProperty',
    'valueOf',
    '__defineGetter__',
    'isPrototypeOf',
  ])('should answer 401 for the inherited member name %s as a token', async (token) => {
    const response = await auth(request(`Bearer ${token}`), ['api']);
    expect(response).toMatchObject({ status: 401, body: { message: 'Unauthenticated.' } });
  });

  it.each([undefined, '', 'Bearer', 'Basic staff-token', 'Bearer staff-token extra'])(
    'should answer 401 for the header %j',
    async (header) => {
      expect(await auth(request(header), ['api'])).toMatchObject({ status: 401 });
    },
  );

  it('should answer 401 for a token not issued for the guard', async () => {
    const customer = bearerAuth({ 'customer-token': ['api'] });
    expect(await customer(request('Bearer customer-token'), ['admin'])).toMatchObject({
      status: 401,
    });
  });
});
