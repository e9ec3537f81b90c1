// Side-by-side reference: @targetprocess/balancer-core 0.7.0 drained on the same database and
// with the same shape as `pump bench`'s balancer rows (docs/benchmarks.md, "balancer-core side
// by side"). Not part of the build or of CI: run it by hand, then `pump bench --only balancer`
// against the same database, and compare the absolute rates (and each against that run's
// baseline.skiplocked).
//
//   npm install && node bench.js postgres://postgres@localhost:55500/bench [messages] [keys] [concurrency]
//
// For each mode (async removal, the library's default; then syncMessageRemove) and three rounds:
// stores `messages` messages over `keys` keys with storeMessage (the library batches the
// inserts), then drains them with `concurrency` concurrent processNextMessage loops under
// lockPartition, and reports messages/s until the handler has seen every message ("handled")
// and until the messages table holds none of them ("removed", the point `pump bench` measures:
// its drain ends when the rows are gone). Prints the median round of each mode.
'use strict';
const { Pool } = require('pg');
const { Db, migrateDb, MessageBalancer, MessageCache, MessageStorage } = require('@targetprocess/balancer-core');

const url = process.argv[2] || process.env.PG_URL;
const messages = Number(process.argv[3] || 5000);
const keys = Number(process.argv[4] || 100);
const concurrency = Number(process.argv[5] || 8);
const rounds = 3;
if (!url || !(messages > 0) || !(keys > 0) || !(concurrency > 0)) {
  console.error('usage: node bench.js <postgres-url> [messages] [keys] [concurrency]');
  process.exit(2);
}
const silent = { log: () => {} };

async function remaining(pool, group) {
  const r = await pool.query('SELECT count(*)::int AS n FROM messages WHERE partition_group = $1', [group]);
  return r.rows[0].n;
}

async function round(pool, syncMessageRemove, i) {
  const group = `bench-core-${syncMessageRemove ? 'sync' : 'async'}-${i}`;
  await pool.query('DELETE FROM messages WHERE partition_group = $1', [group]);
  const storage = new MessageStorage({ db: new Db({ pool }), logger: silent });
  const balancer = new MessageBalancer({
    partitionGroup: group,
    storage,
    cache: new MessageCache({ logger: silent }),
    logger: silent,
    lockPartition: true,
    syncMessageRemove
  });
  await balancer.init();
  const storeStart = process.hrtime.bigint();
  const stores = [];
  for (let m = 0; m < messages; m++) {
    const content = Buffer.alloc(8);
    content.writeBigInt64BE(BigInt(m));
    stores.push(balancer.storeMessage({ partitionKey: `key-${m % keys}`, content, properties: {} }));
  }
  await Promise.all(stores);
  const stored = Number(process.hrtime.bigint() - storeStart) / 1e9;

  const last = new Map();
  let violations = 0;
  let started = 0;
  let handled = 0;
  const handler = async message => {
    const seq = Number(message.content.readBigInt64BE(0));
    const before = last.get(message.partitionKey);
    if (before !== undefined && before > seq) violations++;
    last.set(message.partitionKey, seq);
    handled++;
    return { type: 'Ok' };
  };
  const start = process.hrtime.bigint();
  const loops = [];
  for (let w = 0; w < concurrency; w++) {
    loops.push((async () => {
      // processNextMessage waits for a message: exactly `messages` calls in all.
      while (started < messages) {
        started++;
        await balancer.processNextMessage(handler);
      }
    })());
  }
  await Promise.all(loops);
  const handledAt = Number(process.hrtime.bigint() - start) / 1e9;
  while ((await remaining(pool, group)) > 0) {
    await new Promise(resolve => setTimeout(resolve, 5));
  }
  const removedAt = Number(process.hrtime.bigint() - start) / 1e9;
  return {
    store: messages / stored,
    handled: messages / handledAt,
    removed: messages / removedAt,
    violations,
    count: handled
  };
}

function median(rs, f) {
  const v = rs.map(f).sort((a, b) => a - b);
  return v[Math.floor(v.length / 2)];
}

(async () => {
  const pool = new Pool({ connectionString: url, max: concurrency + 2 });
  await migrateDb({ pool, logger: silent });
  console.log(`balancer-core 0.7.0, ${messages} messages, ${keys} keys, ${concurrency} concurrent, lockPartition`);
  for (const sync of [false, true]) {
    const rs = [];
    for (let i = 0; i < rounds; i++) rs.push(await round(pool, sync, i));
    const fmt = x => Math.round(x).toString();
    console.log(
      `${sync ? 'syncMessageRemove' : 'async removal    '}` +
        ` removed ${fmt(median(rs, r => r.removed))}/s (${rs.map(r => fmt(r.removed)).join('/')})` +
        ` handled ${fmt(median(rs, r => r.handled))}/s` +
        ` store ${fmt(median(rs, r => r.store))}/s` +
        ` order violations ${rs.reduce((a, r) => a + r.violations, 0)}` +
        ` handled ${rs.reduce((a, r) => a + r.count, 0)} of ${rounds * messages}`
    );
  }
  await pool.end();
})().catch(e => {
  console.error(e);
  process.exit(1);
});
