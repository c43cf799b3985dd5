import { defaultServerConditions } from 'vite';
import { defineConfig } from 'vitest/config';

// Tests run the TypeScript sources: `machine-routes/*` imports (fixtures, generated code) resolve
// through package.json's `machine-routes-source` condition to src/, not to the built dist/.
const conditions = ['machine-routes-source', ...defaultServerConditions];

// Two cores on CI machines: forks keep native drivers (better-sqlite3, pg) isolated per file,
// and a small pool keeps PostgreSQL and the HTTP servers from starving each other.
export default defineConfig({
  resolve: { conditions },
  ssr: { resolve: { conditions, externalConditions: ['machine-routes-source'] } },
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 20_000,
    hookTimeout: 30_000,
  },
});
