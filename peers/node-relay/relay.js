'use strict';
// A small outbox relay in Node.js (pg + amqplib) that keeps outboxchaos's
// process contract (docs/relay-contract.md), to prove the contract is not
// Go-shaped. It is the lock-holding relay design: one transaction per batch that
// locks PENDING rows of notification_outbox with FOR UPDATE SKIP LOCKED,
// holds the locks across the publish, waits for the broker's confirms (up
// to the confirm timeout) and marks the confirmed rows PUBLISHED in the
// same transaction. A crash after the publish and before the commit
// publishes the batch again: the worker's inbox absorbs the copies.

const crypto = require('crypto');
const fs = require('fs');
const { Client } = require('pg');
const amqp = require('amqplib');

const env = process.env;

// A flaw, given as --flaw=NAME, makes this relay a test peer that breaks
// the contract on purpose, so the harness can show it catches the break:
// ignore-returns counts a confirmed publish as done although the broker
// returned it unroutable; nack-as-success counts a nacked publish as done;
// random-id publishes each message under a fresh random message_id;
// mark-first commits a batch's rows as published before publishing them.
const FLAWS = {
  'ignore-returns': 'a publish the broker returned unroutable counts as done once confirmed',
  'nack-as-success': 'a publish the broker nacked counts as done',
  'random-id': 'each publish carries a fresh random message_id, not notification-outbox-{id}',
  'mark-first': 'a batch is committed as published before it is published',
};
const args = process.argv.slice(2);
const flawArg = args.find((a) => a.startsWith('--flaw='));
const flaw = flawArg ? flawArg.slice('--flaw='.length) : '';
if (flaw && !FLAWS[flaw]) {
  process.stderr.write(`unknown flaw ${JSON.stringify(flaw)} (known: ${Object.keys(FLAWS).join(', ')})\n`);
  process.exit(2);
}
// --no-confirms publishes without publisher confirms, which the contract
// allows: a publish is done once written, and the relay declares it.
const noConfirms = args.includes('--no-confirms');
// --no-killpoints declares and honours no kill-point, as a relay written
// without the harness in mind: the harness can only kill it from outside.
const noKillpoints = args.includes('--no-killpoints');
for (const a of args) {
  if (a !== '--no-confirms' && a !== '--no-killpoints' && !a.startsWith('--flaw=')) {
    process.stderr.write(`unknown argument ${JSON.stringify(a)} (known: --flaw=NAME, --no-confirms, --no-killpoints)\n`);
    process.exit(2);
  }
}
const KILLPOINTS = noKillpoints ? [] : ['relay.after-claim', 'relay.after-publish', 'relay.after-confirm', 'relay.before-mark'];

// duration parses a Go duration ("600ms", "1.5s", "1m30s") into ms.
function duration(s, def) {
  if (!s) return def;
  const unit = { h: 3600e3, m: 60e3, s: 1e3, ms: 1, us: 1e-3, 'µs': 1e-3, ns: 1e-6 };
  let ms = 0;
  const re = /([0-9.]+)(h|ms|m|s|us|µs|ns)/g;
  let m, seen = '';
  while ((m = re.exec(s)) !== null) { ms += parseFloat(m[1]) * unit[m[2]]; seen += m[0]; }
  if (seen !== s) throw new Error(`bad duration ${JSON.stringify(s)}`);
  return ms;
}

const confirmTimeout = duration(env.OUTBOXCHAOS_CONFIRM_TIMEOUT, 5000);
const interval = duration(env.OUTBOXCHAOS_RELAY_INTERVAL, 1000);
const queryTimeout = 5000;
const batchSize = parseInt(env.OUTBOXCHAOS_BATCH_SIZE || '100', 10);
const instance = env.OUTBOXCHAOS_INSTANCE || 'node-relay';
const exchange = env.OUTBOXCHAOS_EXCHANGE || '';
const routingKey = env.OUTBOXCHAOS_ROUTING_KEY || 'send';

if (env.OUTBOXCHAOS_RELAY_DESCRIBE === '1') {
  process.stdout.write(JSON.stringify({
    killpoints: KILLPOINTS,
    broker: true,
    publish_events: true,
    no_confirms: noConfirms,
    deadlines: [
      ...(noConfirms ? [] : [{ name: 'confirm-timeout', value: 'OUTBOXCHAOS_CONFIRM_TIMEOUT', why: 'confirms awaited this long, then the batch is published again on a new channel' }]),
      { name: 'relay-interval', value: 'OUTBOXCHAOS_RELAY_INTERVAL', why: 'the poll interval when the outbox is drained' },
      { name: 'query-timeout', value: '5s', why: "pg's client-side query_timeout: a stalled database connection is given up after it" },
    ],
    settings: [
      { name: 'language', value: `Node.js ${process.version}, pg, amqplib`, why: 'peers/node-relay/package-lock.json' },
      { name: 'outbox', value: 'notification_outbox (ours)', why: 'the contract\'s default: no status query needed' },
      { name: 'claim', value: 'SELECT … FOR UPDATE SKIP LOCKED held across the publish', why: 'design §7: no lease, the row lock is the claim' },
      { name: 'mark', value: "status='PUBLISHED', published_at in the claim's transaction", why: 'design §7' },
      { name: 'batch-size', value: String(batchSize), why: 'OUTBOXCHAOS_BATCH_SIZE' },
      { name: 'relay-window', value: 'ignored', why: 'this relay publishes at any hour (our relay keeps the quiet hours)' },
      ...(noKillpoints ? [{ name: 'kill-points', value: 'none', why: 'a relay written without the harness in mind: it can only be killed from outside' }] : []),
      ...(noConfirms ? [{ name: 'confirms', value: 'off', why: 'a publish is done once written (the contract allows it)' }] : []),
      ...(flaw ? [{ name: 'flaw', value: flaw, why: `a test peer: ${FLAWS[flaw]}` }] : []),
    ],
  }) + '\n');
  process.exit(0);
}

// log writes one slog-style JSON line synchronously, so a line written
// right before a kill-point is not lost with the process.
function log(level, msg, attrs = {}) {
  fs.writeSync(1, JSON.stringify({ time: new Date().toISOString(), level, msg, ...attrs, instance, component: 'node-relay' }) + '\n');
}

// Kill-points: OUTBOXCHAOS_KILLPOINT=name[:N][,name[:N]…] kills the
// process with SIGKILL on the N-th hit of name, after writing
// "KILLPOINT name hit N" to stderr.
const armed = {};
for (const part of (env.OUTBOXCHAOS_KILLPOINT || '').split(',').filter(Boolean)) {
  const [name, n] = part.split(':');
  if (!KILLPOINTS.includes(name)) { log('ERROR', `unknown kill-point ${name}`); process.exit(2); }
  armed[name] = n ? parseInt(n, 10) : 1;
}
const hits = {};
function hit(name) {
  hits[name] = (hits[name] || 0) + 1;
  if (armed[name] === hits[name]) {
    fs.writeSync(2, `KILLPOINT ${name} hit ${hits[name]}\n`);
    process.kill(process.pid, 'SIGKILL');
  }
}

// pgConfig turns the contract's libpq URL into pg's configuration: its
// search_path and application_name query parameters become run-time
// parameters.
function pgConfig(raw) {
  const u = new URL(raw);
  const searchPath = u.searchParams.get('search_path');
  const appName = u.searchParams.get('application_name');
  u.searchParams.delete('search_path');
  u.searchParams.delete('application_name');
  const c = { connectionString: u.toString(), query_timeout: queryTimeout, connectionTimeoutMillis: 5000 };
  if (searchPath) c.options = `-c search_path=${searchPath}`;
  if (appName) c.application_name = appName;
  return c;
}

let pg = null;
let conn = null;
let ch = null;
let returned = new Set();
let stopping = false;

function dropPG() {
  const old = pg;
  pg = null;
  if (old) old.end().catch(() => {});
}

function dropBroker() {
  const old = conn;
  conn = null;
  ch = null;
  if (old) old.close().catch(() => {});
}

async function connect() {
  if (!pg) {
    const c = new Client(pgConfig(env.OUTBOXCHAOS_PG_URL));
    c.on('error', (err) => { log('WARN', 'database connection lost', { event: 'db-error', err: String(err) }); if (pg === c) pg = null; });
    await c.connect();
    pg = c;
  }
  if (!ch) {
    const url = (env.OUTBOXCHAOS_AMQP_URL || '').split(',')[0];
    const cn = await amqp.connect(url);
    cn.on('error', (err) => log('WARN', 'broker connection error', { event: 'broker-error', err: String(err) }));
    cn.on('close', () => { if (conn === cn) { conn = null; ch = null; } });
    const c = noConfirms ? await cn.createChannel() : await cn.createConfirmChannel();
    c.on('error', (err) => log('WARN', 'broker channel error', { event: 'broker-error', err: String(err) }));
    c.on('return', (msg) => returned.add(msg.properties.messageId));
    conn = cn;
    ch = c;
  }
}

// publish sends one message and resolves with its outcome.
function publish(c, id, body) {
  const messageId = flaw === 'random-id' ? crypto.randomUUID() : `notification-outbox-${id}`;
  const props = { messageId, persistent: true, contentType: 'application/json', mandatory: true, timestamp: Math.floor(Date.now() / 1000) };
  if (noConfirms) {
    // Done once written: nothing comes back to wait for.
    try {
      c.publish(exchange, routingKey, Buffer.from(body), props);
      return Promise.resolve('confirmed');
    } catch (err) {
      return Promise.resolve('failed');
    }
  }
  return new Promise((resolve) => {
    try {
      c.publish(exchange, routingKey, Buffer.from(body), props, (err) => {
        if (err) resolve(flaw === 'nack-as-success' ? 'confirmed' : 'nacked');
        else if (returned.delete(messageId) && flaw !== 'ignore-returns') resolve('returned');
        else resolve('confirmed');
      });
    } catch (err) {
      resolve('failed');
    }
  });
}

// pass relays one batch and returns how many rows it claimed.
async function pass() {
  const db = pg;
  const c = ch;
  await db.query('BEGIN');
  try {
    const { rows } = await db.query(
      `SELECT id, dedup_key, payload FROM notification_outbox WHERE status = 'PENDING' ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED`, [batchSize]);
    if (rows.length === 0) { await db.query('COMMIT'); return 0; }
    hit('relay.after-claim');
    if (flaw === 'mark-first') {
      await db.query(`UPDATE notification_outbox SET status = 'PUBLISHED', published_at = now(), updated_at = now(), attempts = attempts + 1 WHERE id = ANY($1)`, [rows.map((r) => r.id)]);
      await db.query('COMMIT');
      await db.query('BEGIN');
    }
    const pending = rows.map((r) => {
      const body = JSON.stringify({ ...r.payload, outbox_id: Number(r.id), dedup_key: r.dedup_key });
      return publish(c, r.id, body);
    });
    hit('relay.after-publish');
    let timer;
    const deadline = new Promise((resolve) => { timer = setTimeout(() => resolve(null), confirmTimeout); });
    const outcomes = await Promise.all(pending.map((p) => Promise.race([p, deadline.then(() => 'timed-out')])));
    clearTimeout(timer);
    const done = [];
    rows.forEach((r, i) => {
      log(outcomes[i] === 'confirmed' ? 'INFO' : 'WARN', 'publish', { event: 'publish', message_id: `notification-outbox-${r.id}`, outcome: outcomes[i] });
      if (outcomes[i] === 'confirmed') done.push(r.id);
    });
    hit('relay.after-confirm');
    if (done.length > 0 && flaw !== 'mark-first') {
      hit('relay.before-mark');
      await db.query(`UPDATE notification_outbox SET status = 'PUBLISHED', published_at = now(), updated_at = now(), attempts = attempts + 1 WHERE id = ANY($1)`, [done]);
    }
    await db.query('COMMIT');
    if (done.length < rows.length) {
      // A channel that lost or refused confirms is not trusted again.
      dropBroker();
    }
    return rows.length;
  } catch (err) {
    db.query('ROLLBACK').catch(() => {});
    throw err;
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function main() {
  log('INFO', 'node relay starting', { event: 'start', exchange, confirm_timeout_ms: confirmTimeout });
  let backoff = interval;
  while (!stopping) {
    let n = 0;
    try {
      await connect();
      n = await pass();
      backoff = interval;
    } catch (err) {
      log('WARN', 'relay pass failed', { event: 'pass-failed', err: String(err && err.message || err) });
      dropPG();
      dropBroker();
      backoff = Math.min(backoff * 2, 2000);
      await sleep(backoff);
      continue;
    }
    if (n < batchSize) await sleep(interval);
  }
  dropBroker();
  dropPG();
  log('INFO', 'node relay stopped', { event: 'stop' });
  process.exit(0);
}

for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => { stopping = true; });
main().catch((err) => { log('ERROR', 'relay failed', { err: String(err) }); process.exit(1); });
