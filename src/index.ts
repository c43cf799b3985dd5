/**
 * `machine-routes`: the generator API and `defineConfig`.
 */
export {};
