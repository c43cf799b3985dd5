/**
 * Every error of src/runtime/errors.ts whose `statusCode` is not 500 is one the HTTP layer
 * answers with that status when it escapes a request (`errorToResponse`), never the unhandled
 * 500 with a log line: a new client-facing error without a mapping fails here.
 */
import { describe, expect, it } from 'vitest';
import * as errors from '../../../src/runtime/errors.js';
import { errorToResponse } from '../../../src/runtime/http/responses.js';
import type { HttpLogger } from '../../../src/runtime/http/types.js';

type ErrorClass = new (...args: unknown[]) => errors.MachineRoutesError;

/** One instance of each exported error class, built with arguments its constructor takes. */
function instances(): errors.MachineRoutesError[] {
  return (Object.values(errors) as unknown[])
    .filter(
      (value): value is ErrorClass =>
        typeof value === 'function' && value.prototype instanceof errors.MachineRoutesError,
    )
    .map((ErrorClass) => {
      if (ErrorClass === (errors.AggregateMachineRoutesError as unknown as ErrorClass))
        return new ErrorClass([]);
      // The second argument: field errors, a snapshot (none read), details, or a cause's details.
      const second =
        ErrorClass === (errors.MachineValidationException as unknown as ErrorClass) ? {} : null;
      return new ErrorClass("Instance '01J' of machine 'order' refuses.", second, {});
    });
}

describe('errorToResponse', () => {
  const clientFacing = instances().filter((error) => error.statusCode !== 500);

  it('should know the client-facing errors of errors.ts', () => {
    expect(clientFacing.map((error) => error.code)).toEqual(
      expect.arrayContaining([
        'MR_INSTANCE_PAUSED',
        'MR_PINNED_VERSION_ROUTE',
        'MR_RUNTIME_CLOSED',
      ]),
    );
  });

  it.each(clientFacing.map((error) => [error.name, error] as const))(
    'should answer %s with its status, not an unhandled 500',
    (_name, error) => {
      const logged: string[] = [];
      const logger: HttpLogger = { error: (message) => logged.push(message) };
      const response = errorToResponse(error, logger, 'order.submit');
      expect(logged).toEqual([]);
      expect(response.status).toBe(error.statusCode);
      expect(response.body).toMatchObject({ message: expect.any(String) });
    },
  );
});
