// Measures what partitioning costs Postgres on the worker's hot path (DESIGN 9): the claim and the record of
// one delivery at a time (BATCH, default 1), on three copies of the schema: `deliveries` and
// `delivery_attempts` unpartitioned, with the 2 partitions a new database has, and with 6 (30 days of
// retention by week). The CPU is the serving backend's own (/proc/<pid>/stat), so the client's is left out.
// Rounds alternate between the copies, as this VM's speed drifts. Also counts the relation locks one call
// holds once its plans are cached, and on a connection's first call (which plans it).
//   node scripts/ensure-build.mjs && ROUNDS=3 DELIVERIES=8000 node scripts/partition-cost.mjs
// Same server as DATABASE_URL; databases calc_webhooks_partition_cost_*, dropped at the end.
import 'reflect-metadata';
import { readFileSync } from 'node:fs';
import { URL } from 'node:url';
import pg from 'pg';
import { loadConfig } from '../dist/core/config/config.js';
import { runMigrations } from '../dist/core/database/migrate.js';
import { createDeliveryPartitions } from '../dist/delivery/store/delivery-partitions.js';
import { unpartition } from '../bench/lib/unpartition.mjs';

const ROUNDS = Number(process.env.ROUNDS ?? 3);
const DELIVERIES = Number(process.env.DELIVERIES ?? 8000);
const BATCH = Number(process.env.BATCH ?? 1);
const WEBHOOKS = 20;
const WEEK_MS = 7 * 86_400_000;
const CLOCK_TICK_MS = 10; // USER_HZ 100, as on every Linux this runs on
const base = new URL(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/calc_webhooks');
const dbUrl = (name) => Object.assign(new URL(base), { pathname: `/${name}` }).toString();

const SIDES = [
  { key: 'unpartitioned', db: 'calc_webhooks_partition_cost_plain' },
  { key: '2 partitions', db: 'calc_webhooks_partition_cost_p2' },
  { key: '6 partitions', db: 'calc_webhooks_partition_cost_p6' },
];
const TEMPLATE = 'calc_webhooks_partition_cost_template';
// The deliveries' created_at: an hour ago, in this week's partition.
const createdAt = new Date(Date.now() - 3_600_000);

async function withClient(db, work) {
  const client = new pg.Client({ connectionString: dbUrl(db) });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** One workspace and its webhooks; per round DELIVERIES pending deliveries, each with its submission. */
async function seed(c) {
  await c.query(`INSERT INTO workspaces (id, name) VALUES ('ws', 'partition cost')`);
  await c.query(`INSERT INTO calculators (id, workspace_id, folder_id, name) VALUES ('calc', 'ws', 'f', 'c')`);
  await c.query(
    `INSERT INTO webhooks (id, workspace_id, url, secret)
     SELECT 'w' || g, 'ws', 'http://127.0.0.1:9/hook', 's' FROM generate_series(1, $1) g`,
    [WEBHOOKS],
  );
  const total = DELIVERIES * ROUNDS + BATCH * 4; // and a few for the lock counts
  await c.query(
    `INSERT INTO submissions (id, workspace_id, calculator_id, data)
     SELECT 's' || g, 'ws', 'calc', '{"a":1}' FROM generate_series(1, $1) g`,
    [total],
  );
  await c.query(
    `INSERT INTO deliveries (id, workspace_id, webhook_id, submission_id, max_attempts, next_attempt_at, created_at)
     SELECT 'd' || g, 'ws', 'w' || (g % $2 + 1), 's' || g, 5, now(), $3 FROM generate_series(1, $1) g`,
    [total, WEBHOOKS, createdAt],
  );
  await c.query(`VACUUM ANALYZE`);
}

const CLAIM = { name: 'claim', text: 'SELECT * FROM claim_delivery_attempts($1, $2, $3)' };
const UNLOCK = { name: 'unlock', text: 'SELECT pg_advisory_unlock_all()' };
const RECORD = {
  name: 'record',
  text: 'SELECT * FROM record_delivery_attempts($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)',
};

/** Claims, unlocks and records the deliveries `ids`, as the worker does (each its own statement). */
async function attempt(c, ids) {
  const at = ids.map(() => createdAt);
  const claimed = (await c.query({ ...CLAIM, values: [ids, at, 60_000] })).rows;
  if (claimed.length !== ids.length || claimed.some((r) => r.outcome !== 'claimed')) {
    throw new Error(`claim: ${JSON.stringify(claimed.map((r) => r.outcome))}`);
  }
  await c.query(UNLOCK);
  const now = new Date();
  const n = ids.length;
  const fill = (v) => ids.map(() => v);
  const recorded = (
    await c.query({
      ...RECORD,
      values: [
        ids,
        fill(1),
        fill('scheduled'),
        fill(now),
        fill(3),
        fill(200),
        fill('ok'),
        fill(null),
        fill(true),
        fill('succeeded'),
        fill(null),
        fill(now),
        10,
        0,
        at,
      ],
    })
  ).rows;
  if (recorded.filter((r) => r.kind === 'delivery').length !== n) throw new Error('record: not every attempt recorded');
}

const backendCpuMs = (pid) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * CLOCK_TICK_MS; // utime, stime
};

async function claimAndRecord(c, round) {
  await c.query(`SET synchronous_commit = off`); // the commit's flush is not what is compared
  const [{ pid }] = (await c.query(`SELECT pg_backend_pid() AS pid`)).rows;
  const first = (round - 1) * DELIVERIES + 1;
  await attempt(c, [`d${first}`]); // plans cached before the clock starts
  const cpuBefore = backendCpuMs(pid);
  const started = process.hrtime.bigint();
  for (let i = first + 1; i < first + DELIVERIES; i += BATCH) {
    await attempt(
      c,
      Array.from({ length: Math.min(BATCH, first + DELIVERIES - i) }, (_, k) => `d${i + k}`),
    );
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const cpuMs = backendCpuMs(pid) - cpuBefore;
  return { usPerDelivery: (cpuMs * 1000) / (DELIVERIES - 1), perSecond: (DELIVERIES - 1) / seconds };
}

/** Relation locks one claim holds, on a connection's first call (planning) and once its plans are cached. */
async function countLocks(c) {
  const total = DELIVERIES * ROUNDS;
  const locksOf = async (id) => {
    await c.query('BEGIN');
    await c.query({ ...CLAIM, values: [[id], [createdAt], 60_000] });
    const [{ n }] = (
      await c.query(`SELECT count(*)::int AS n FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'relation'`)
    ).rows;
    await c.query('ROLLBACK');
    await c.query(UNLOCK);
    return n;
  };
  return { firstCall: await locksOf(`d${total + 1}`), cached: await locksOf(`d${total + 2}`) };
}

/**
 * Each round's ratio to the unpartitioned run of the same round, as percentages: the median and quartiles.
 * Paired, so the VM's drift between rounds (often wider than the difference) cancels out.
 */
function paired(side) {
  const ratios = side.runs.map((r, i) => r.usPerDelivery / SIDES[0].runs[i].usPerDelivery - 1).sort((a, b) => a - b);
  const at = (q) => signedPercent(ratios[Math.round(q * (ratios.length - 1))]);
  return `${at(0.5)} (${at(0.25)} to ${at(0.75)})`;
}

const signedPercent = (fraction) => `${fraction >= 0 ? '+' : ''}${(fraction * 100).toFixed(1)}%`;

function report() {
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const plain = median(SIDES[0].runs.map((r) => r.usPerDelivery));
  console.log(
    `\nclaim + record, ${BATCH} deliver${BATCH === 1 ? 'y' : 'ies'} a call, ${DELIVERIES} deliveries x ${ROUNDS} rounds`,
  );
  console.log(
    '| tables | partitions | backend CPU us/delivery (runs) | median | against unpartitioned | paired by round: median (quartiles) | claims/s (median) | relation locks of a claim: first call, cached |',
  );
  console.log('|---|---:|---|---:|---:|---|---:|---|');
  for (const side of SIDES) {
    const us = side.runs.map((r) => r.usPerDelivery);
    const m = median(us);
    console.log(
      `| ${side.key} | ${side.partitions} | ${us.map((x) => x.toFixed(0)).join(', ')} | ${m.toFixed(0)} | ` +
        `${side === SIDES[0] ? '' : signedPercent((m - plain) / plain)} | ` +
        `${side === SIDES[0] ? '' : paired(side)} | ` +
        `${median(side.runs.map((r) => r.perSecond)).toFixed(0)} | ${side.locks.firstCall}, ${side.locks.cached} |`,
    );
  }
}

async function main() {
  const admin = new pg.Client({ connectionString: dbUrl('postgres') });
  await admin.connect();
  const dropAll = async () => {
    for (const name of [TEMPLATE, ...SIDES.map((s) => s.db)]) await admin.query(`DROP DATABASE IF EXISTS ${name}`);
  };
  await dropAll();
  try {
    await runMigrations(loadConfig({ ...process.env, DATABASE_URL: dbUrl(TEMPLATE) }));
    for (const side of SIDES) await admin.query(`CREATE DATABASE ${side.db} TEMPLATE ${TEMPLATE}`);
    await withClient(SIDES[0].db, unpartition);
    await withClient(SIDES[2].db, (c) =>
      createDeliveryPartitions(
        { query: async (text, values) => (await c.query(text, values)).rows }, // rows, as TypeORM answers
        { from: new Date(Date.now() - 4 * WEEK_MS), to: new Date(), intervalMs: WEEK_MS },
      ),
    );
    for (const side of SIDES) {
      side.partitions = await withClient(side.db, async (c) => {
        await seed(c);
        const [{ n }] = (
          await c.query(`SELECT count(*)::int AS n FROM pg_inherits WHERE inhparent = 'deliveries'::regclass`)
        ).rows;
        return n;
      });
      side.runs = [];
      side.locks = await withClient(side.db, countLocks);
    }
    for (let round = 1; round <= ROUNDS; round++) {
      // In turns, the order reversed every other round, so drift within a round favours no side.
      for (const side of round % 2 ? SIDES : [...SIDES].reverse()) {
        const run = await withClient(side.db, (c) => claimAndRecord(c, round));
        side.runs.push(run);
        console.log(`round ${round} ${side.key}: ${run.usPerDelivery.toFixed(0)} us of backend CPU per delivery`);
      }
    }
    report();
  } finally {
    await dropAll();
    await admin.end();
  }
}

await main();
