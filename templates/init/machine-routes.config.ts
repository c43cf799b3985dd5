// machine-routes.config.ts
import { defineConfig } from 'machine-routes/config';
import { orderMachine } from './machines/order.js';

export default defineConfig({
  registrations: [
    {
      machine: orderMachine,
      prefix: 'orders',
      create: true,
      machineIdFor: ['SUBMIT', 'APPROVE', 'CANCEL'],
    },
  ],
  output: { dir: 'src/generated', framework: 'fastify' },
});
