/** Config the retention test's `machine-routes worker` process loads. */
import { defineConfig } from 'machine-routes';
import { documentMachine } from './machines.js';

export default defineConfig({
  registrations: [{ machine: documentMachine, prefix: 'documents', create: true }],
});
