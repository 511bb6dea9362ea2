import Koa from 'koa';
import pg from 'pg';

/**
 * The ceiling for durable writes: a bare Koa route that parses a JSON body and commits one
 * row per request (autocommit INSERT, the database's default synchronous commit), with no
 * authentication, validation, sandbox or activity log. Started as its own process.
 */
const pool = new pg.Pool({ connectionString: process.env.BENCH_DATABASE_URL, max: 10 });
await pool.query('create table if not exists bench_durable (id bigserial primary key, body jsonb not null, created_at timestamptz not null default now())');
const app = new Koa();
app.use(async (ctx) => {
  const chunks: Buffer[] = [];
  for await (const chunk of ctx.req) chunks.push(chunk as Buffer);
  const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
  const { rows } = await pool.query('insert into bench_durable (body) values ($1) returning id, created_at', [body]);
  ctx.status = 201;
  ctx.body = rows[0];
});
const server = app.listen(0, '127.0.0.1', () => {
  const address = server.address();
  console.log(`listening on http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`);
});
process.on('SIGINT', () => server.close(() => void pool.end().then(() => process.exit(0))));
