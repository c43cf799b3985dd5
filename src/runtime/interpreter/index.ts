// Public surface of interpreter/ (re-exported by src/runtime/index.ts).
export {};
