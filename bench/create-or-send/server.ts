/**
 * The server of bench/create-or-send/run.ts: `tsx bench/create-or-send/server.ts <store url>`.
 * Prints `READY <port>`. The keyed order machine at /plain (create, PAYMENT by machine id) and
 * /keyed (PAYMENT by `createOrSend` on `orderNumber`).
 */
import { keyedOrderMachine } from '../../fixtures/http/keyed-order-machine.js';
import { serveRouter } from '../router-server.js';

await serveRouter((router) => {
  const only = ['PAYMENT'];
  router.register(keyedOrderMachine, {
    prefix: 'plain',
    name: 'plain',
    create: true,
    only,
    machineIdFor: only,
  });
  router.register(keyedOrderMachine, {
    prefix: 'keyed',
    name: 'keyed',
    only,
    createOrSend: { key: 'orderNumber', events: only },
  });
});
