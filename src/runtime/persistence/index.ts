// Public surface of persistence/ (re-exported by src/runtime/index.ts).
export {};
