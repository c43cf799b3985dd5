// Public surface of definition/ (re-exported by src/runtime/index.ts).
export {};
