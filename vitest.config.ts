import { defineConfig } from 'vitest/config';

// Two cores on CI machines: forks keep native drivers (better-sqlite3, pg) isolated per file,
// and a small pool keeps PostgreSQL and the HTTP servers from starving each other.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 20_000,
    hookTimeout: 30_000,
  },
});
