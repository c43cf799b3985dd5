/**
 * The floor of bench/startup: what any Fastify application serving the example's API would load
 * whatever it is built with. Bare Fastify (as bench/startup/bare-fastify.ts) plus zod and the
 * example machines' own payload and job schemas, built as the machines build them (copies of
 * the `z.` expressions of fixtures/example/machines/*.ts; keep them in step). With `--sqlite` it
 * also opens a SQLite file with better-sqlite3 (WAL, one table created if missing), as an
 * application keeping its state in SQLite would.
 *
 * Not the issue's baseline (bare Fastify stays that): a separate, labelled row, so the report
 * can say how much of the example's start is its own dependencies rather than machine-routes.
 */
import Fastify from 'fastify';
import { z } from 'zod';

/** The schemas of the example machines, as they define them (order, invoice, ticket, ...). */
function exampleSchemas(): z.ZodType[] {
  const operands = z.object({ a: z.number(), b: z.number() });
  return [
    // calculator.ts: ADD and MULTIPLY share one schema.
    operands,
    // order.ts: SUBMIT, QUOTE.
    z.object({
      amount: z.number().int().min(1).describe('Order total in cents.'),
      note: z.string().max(200).optional().describe('A note for the approver.'),
    }),
    z.object({
      quantity: z.coerce.number().int().min(1).describe('How many items to price (25 each).'),
    }),
    // invoice.ts: PAY.
    z.object({ amount: z.number().positive(), method: z.enum(['card', 'transfer']) }),
    // ticket.ts: COMMENT, ASSIGN.
    z.object({ text: z.string().min(1).max(2000).describe('The comment, plain text.') }),
    z.object({ agent: z.string().min(1).describe('Name of the support agent.') }),
    // checkout.ts: PROVIDE_CARD, the capturePayment job's input and output.
    z.object({ card: z.string().regex(/^\d{12,19}$/) }),
    z.object({ orderId: z.string(), amount: z.number(), paidWith: z.string() }),
    z.object({ paymentId: z.string(), amount: z.number() }),
  ];
}

async function openSqlite(): Promise<void> {
  const { default: Database } = await import('better-sqlite3');
  const url = process.env['MACHINE_DATABASE_URL'] ?? 'sqlite:./data/floor.db';
  const database = new Database(url.replace(/^sqlite:/, ''));
  database.pragma('journal_mode = WAL');
  database.exec(
    'CREATE TABLE IF NOT EXISTS machine_instances (id TEXT PRIMARY KEY, value TEXT, context TEXT)',
  );
}

async function main(): Promise<void> {
  const schemas = exampleSchemas();
  if (process.argv.includes('--sqlite')) await openSqlite();
  const app = Fastify();
  app.post('/orders/create', async (_request, reply) =>
    reply.code(201).send({ data: { schemas: schemas.length } }),
  );
  const url = await app.listen({
    port: Number(process.env['PORT'] ?? 3000),
    host: process.env['HOST'] ?? '127.0.0.1',
  });
  console.log(`fastify + zod: listening on ${url}`);
}

void main();
