import { describe, expect, it } from 'vitest';
import { DEFAULT_RUNTIME_CONFIG, loadRuntimeConfig } from '../../../src/runtime/engine/config.js';
import { InvalidSettingsException } from '../../../src/runtime/errors.js';

describe('loadRuntimeConfig', () => {
  it('should use the defaults with an empty environment', () => {
    expect(loadRuntimeConfig({}, {})).toEqual({
      databaseUrl: 'sqlite:./data/machines.db',
      lockTtl: 60,
      lockTimeout: 30,
      maxTransitionDepth: 100,
      scenariosEnabled: false,
      traceBehaviors: false,
      traceSteps: false,
      timerTries: 3,
      timerBackoff: 1,
      shutdownTimeout: 10,
      historyRetentionDays: 0,
      historyRetentionArchive: false,
    });
    expect(loadRuntimeConfig({}, {})).toEqual(DEFAULT_RUNTIME_CONFIG);
  });

  it('should read the environment, with the spec names and the short aliases', () => {
    expect(
      loadRuntimeConfig(
        {},
        {
          MACHINE_DATABASE_URL: 'postgres://u@h:5432/db',
          MACHINE_LOCK_TTL: '5',
          MACHINE_LOCK_TIMEOUT: '2.5',
          MACHINE_MAX_TRANSITION_DEPTH: '7',
          MACHINE_SCENARIOS_ENABLED: 'true',
        },
      ),
    ).toEqual({
      databaseUrl: 'postgres://u@h:5432/db',
      lockTtl: 5,
      lockTimeout: 2.5,
      maxTransitionDepth: 7,
      scenariosEnabled: true,
      traceBehaviors: false,
      traceSteps: false,
      timerTries: 3,
      timerBackoff: 1,
      shutdownTimeout: 10,
      historyRetentionDays: 0,
      historyRetentionArchive: false,
    });
    expect(loadRuntimeConfig({}, { MACHINE_SCENARIOS_ENABLED: '0' }).scenariosEnabled).toBe(false);
    expect(() => loadRuntimeConfig({}, { MACHINE_SCENARIOS_ENABLED: 'yes' })).toThrow(
      'MACHINE_SCENARIOS_ENABLED is "yes"; expected true, false, 1 or 0.',
    );
    expect(
      loadRuntimeConfig(
        {},
        { MACHINE_PARALLEL_DISPATCH_LOCK_TTL: '5', MACHINE_PARALLEL_DISPATCH_LOCK_TIMEOUT: '3' },
      ),
    ).toMatchObject({ lockTtl: 60, lockTimeout: 30 });
  });

  it('should let overrides win over the environment and ignore empty variables', () => {
    expect(
      loadRuntimeConfig(
        { lockTtl: 1, databaseUrl: 'memory:' },
        { MACHINE_LOCK_TTL: '9', MACHINE_DATABASE_URL: '' },
      ),
    ).toMatchObject({ lockTtl: 1, databaseUrl: 'memory:' });
    expect(loadRuntimeConfig({}, { MACHINE_DATABASE_URL: '  ' }).databaseUrl).toBe(
      'sqlite:./data/machines.db',
    );
  });

  it.each([
    [{ MACHINE_LOCK_TTL: 'soon' }, /MACHINE_LOCK_TTL is "soon"; expected a number of seconds > 0/],
    [{ MACHINE_LOCK_TTL: '0' }, /MACHINE_LOCK_TTL/],
    [{ MACHINE_LOCK_TIMEOUT: '-1' }, /MACHINE_LOCK_TIMEOUT/],
    [{ MACHINE_MAX_TRANSITION_DEPTH: '1.5' }, /MACHINE_MAX_TRANSITION_DEPTH/],
    [
      { MACHINE_DATABASE_URL: 'mysql://x' },
      /MACHINE_DATABASE_URL is "mysql:\/\/x"; expected 'sqlite:<file>'/,
    ],
    [
      { MACHINE_PARALLEL_DISPATCH_LOCK_TTLS: '6' },
      /MACHINE_PARALLEL_DISPATCH_LOCK_TTLS is not a setting/,
    ],
  ])('should reject %o naming the variable', (env, message) => {
    expect(() => loadRuntimeConfig({}, env)).toThrow(InvalidSettingsException);
    expect(() => loadRuntimeConfig({}, env)).toThrow(message);
  });

  it('should report every bad setting at once', () => {
    try {
      loadRuntimeConfig({ maxTransitionDepth: 0 }, { MACHINE_LOCK_TTL: 'x' });
      expect.unreachable();
    } catch (error) {
      expect((error as InvalidSettingsException).details.problems).toHaveLength(2);
      expect((error as Error).message).toMatch(/option 'maxTransitionDepth'/);
    }
  });

  it('should keep its lock settings apart from the parallel dispatch ones', () => {
    expect(
      loadRuntimeConfig({}, { MACHINE_LOCK_TTL: '5', MACHINE_PARALLEL_DISPATCH_LOCK_TTL: '7' })
        .lockTtl,
    ).toBe(5);
  });
});
