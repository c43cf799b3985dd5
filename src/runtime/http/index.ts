// Public surface of http/ (re-exported by src/runtime/index.ts).
export {};
