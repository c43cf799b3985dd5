/**
 * The PostgreSQL store, loaded on first use of a PostgreSQL URL. A module of its own so that the
 * build keeps this `import()` out of the large shared chunk a server loads at start: tsx
 * rewrites every module holding a dynamic import and maps it word by word, which on that chunk
 * cost more than the bundle saved (docs/architecture.md "Build").
 */
export const loadPostgresStore = () => import('./postgres-store.js');
