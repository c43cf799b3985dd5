import { describe, expect, it } from 'vitest';
import * as runtime from '../../../src/runtime/index.js';

describe('machine-routes/runtime (http)', () => {
  it.each([
    'planRoutes',
    'planRegistration',
    'validateRegistration',
    'MachineRouter',
    'createRouteHandler',
    'defineEndpointAction',
    'tableModelBinder',
    'mountFastify',
    'fastifyHandler',
    'mountExpress',
    'expressHandler',
    'errorResponse',
    'HttpError',
    'parseQueryString',
    'endpointUriFor',
  ])('should export %s', (name) => {
    expect(typeof (runtime as Record<string, unknown>)[name]).toBe('function');
  });
});
