import { describe, expect, it } from 'vitest';
import * as express from '../../../src/express.js';
import * as fastify from '../../../src/fastify.js';
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
    'errorResponse',
    'HttpError',
    'parseQueryString',
    'endpointUriFor',
  ])('should export %s', (name) => {
    expect(typeof (runtime as Record<string, unknown>)[name]).toBe('function');
  });

  it.each(['mountFastify', 'fastifyHandler', 'mountExpress', 'expressHandler'])(
    'should leave %s to its framework subpath',
    (name) => {
      expect((runtime as Record<string, unknown>)[name]).toBeUndefined();
    },
  );
});

describe('machine-routes/fastify and machine-routes/express', () => {
  it.each([
    [fastify, 'mountFastify'],
    [fastify, 'fastifyHandler'],
    [express, 'mountExpress'],
    [express, 'expressHandler'],
  ] as const)('should export %#: %s', (module, name) => {
    expect(typeof (module as Record<string, unknown>)[name]).toBe('function');
  });
});
