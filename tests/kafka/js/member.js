#!/usr/bin/env node
// One KafkaJS consumer in a group on groupcoord's Kafka port, driven by
// tests/kafka/driver.py. Standard output carries one JSON line per event:
//
//   {"event":"assigned","partitions":[...],"member_id":...,"leader":bool}  after every join and sync
//   {"event":"generation","generation":N,"member_id":...}  the first heartbeat answered after each join,
//                                                    and any answered in another generation or as another member
//   {"event":"committed","offsets":{"P":O,...}}       a commit the driver asked for succeeded
//   {"event":"committed_offsets","offsets":{"P":O|null}}  --read-committed: the group's committed offsets
//   {"event":"crash","error":...}                    KafkaJS gave the consumer up (it restarts it)
//   {"event":"error","op":...,"error":...}
//   {"event":"closed"}
//
// KafkaJS tells the application its generation only with each heartbeat the
// coordinator accepted (the HEARTBEAT instrumentation event): a "generation"
// event reports the first one after every assignment, and every change. Standard input takes one
// JSON command a line: {"cmd":"commit","offsets":{"P":O}} or {"cmd":"close"};
// SIGTERM closes too. With --read-committed it joins no group: it reads the
// committed offsets (OffsetFetch through admin.fetchOffsets), retrying until
// --deadline-s passes, and exits.
//
// --ssl-ca FILE speaks TLS to the Kafka port, trusting the CA certificates in FILE.
// --sasl-mechanism SCRAM-SHA-256 (or PLAIN) connects with SASL as --sasl-username, the
// secret from --sasl-password or $GROUPCOORD_SASL_PASSWORD. Errors carry "code" and "type"
// where KafkaJS gives a Kafka error code; with SASL, errors it only logs come as {"event":"error","op":"log"}.
'use strict';

const fs = require('fs');
const readline = require('readline');
const { Kafka, logLevel } = require('kafkajs');
const { emit, errorText, errorCode } = require('./common');

function parseArgs(argv) {
  const a = {
    bootstrap: '', group: '', topic: '', partitions: 6, clientId: 'kafkajs-member',
    sessionTimeoutMs: 6000, heartbeatMs: 1000, rebalanceTimeoutMs: 10000, readCommitted: false, deadlineS: 30,
    saslMechanism: '', saslUsername: '', saslPassword: process.env.GROUPCOORD_SASL_PASSWORD || '', sslCa: '',
  };
  const names = {
    '--bootstrap': 'bootstrap', '--group': 'group', '--topic': 'topic', '--partitions': 'partitions',
    '--client-id': 'clientId', '--session-timeout-ms': 'sessionTimeoutMs', '--heartbeat-ms': 'heartbeatMs',
    '--rebalance-timeout-ms': 'rebalanceTimeoutMs', '--deadline-s': 'deadlineS',
    '--sasl-mechanism': 'saslMechanism', '--sasl-username': 'saslUsername', '--sasl-password': 'saslPassword',
    '--ssl-ca': 'sslCa',
  };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--read-committed') { a.readCommitted = true; continue; }
    const key = names[argv[i]];
    if (!key || i + 1 >= argv.length) throw new Error(`unknown or incomplete option ${argv[i]}`);
    const v = argv[++i];
    a[key] = typeof a[key] === 'number' ? Number(v) : v;
  }
  if (!a.bootstrap || !a.group || !a.topic) throw new Error('--bootstrap, --group and --topic are required');
  return a;
}

async function readCommitted(kafka, a) {
  const admin = kafka.admin();
  const until = Date.now() + a.deadlineS * 1000;
  let last = '';
  while (Date.now() < until) {
    try {
      await admin.connect();
      const got = await admin.fetchOffsets({ groupId: a.group, topics: [a.topic] });
      const offsets = {};
      for (let n = 0; n < a.partitions; n++) offsets[String(n)] = null;
      for (const t of got) {
        if (t.topic !== a.topic) continue;
        for (const p of t.partitions) {
          const o = Number(p.offset);
          offsets[String(p.partition)] = o >= 0 ? o : null;
        }
      }
      emit({ event: 'committed_offsets', offsets });
      await admin.disconnect();
      return 0;
    } catch (e) {
      last = errorText(e);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  emit({ event: 'error', op: 'committed', error: last || 'deadline passed' });
  await admin.disconnect().catch(() => {});
  return 1;
}

async function member(kafka, a) {
  const consumer = kafka.consumer({
    groupId: a.group,
    sessionTimeout: a.sessionTimeoutMs,
    rebalanceTimeout: a.rebalanceTimeoutMs,
    heartbeatInterval: a.heartbeatMs,
    maxWaitTimeInMs: 500,
  });
  const { GROUP_JOIN, HEARTBEAT, CRASH } = consumer.events;
  let membership = null;
  consumer.on(HEARTBEAT, (e) => {
    const now = `${e.payload.groupGenerationId} ${e.payload.memberId}`;
    if (now === membership) return;
    membership = now;
    emit({ event: 'generation', generation: e.payload.groupGenerationId, member_id: e.payload.memberId });
  });
  consumer.on(GROUP_JOIN, (e) => {
    const assigned = (e.payload.memberAssignment && e.payload.memberAssignment[a.topic]) || [];
    emit({ event: 'assigned', partitions: [...assigned].sort((x, y) => x - y), member_id: e.payload.memberId,
      leader: e.payload.isLeader });
    membership = null;  // the next heartbeat reports the generation of this assignment
  });
  consumer.on(CRASH, (e) => emit({ event: 'crash', error: errorText(e.payload.error), ...errorCode(e.payload.error) }));

  let closing = false;
  const close = async () => {
    if (closing) return;
    closing = true;
    try {
      await consumer.disconnect();
      emit({ event: 'closed' });
      process.exit(0);
    } catch (e) {
      emit({ event: 'error', op: 'close', error: errorText(e) });
      process.exit(1);
    }
  };
  process.on('SIGTERM', close);

  const commands = readline.createInterface({ input: process.stdin });
  commands.on('line', async (line) => {
    if (!line.trim()) return;
    const command = JSON.parse(line);
    if (command.cmd === 'close') return close();
    if (command.cmd === 'commit') {
      const offsets = Object.entries(command.offsets).map(([p, o]) => ({
        topic: a.topic, partition: Number(p), offset: String(o),
      }));
      try {
        await consumer.commitOffsets(offsets);
        emit({ event: 'committed', offsets: command.offsets });
      } catch (e) {
        emit({ event: 'error', op: 'commit', error: errorText(e) });
      }
    }
  });
  commands.on('close', close);  // the driver went away: leave

  await consumer.connect();
  await consumer.subscribe({ topics: [a.topic], fromBeginning: true });
  await consumer.run({ autoCommit: false, eachMessage: async () => {} });
  return null;
}

const loggedErrors = new Set();

async function main() {
  const a = parseArgs(process.argv.slice(2));
  const kafka = new Kafka({
    clientId: a.clientId,
    brokers: a.bootstrap.split(','),
    // KafkaJS keeps some broker errors to its log only: FindCoordinator's GROUP_AUTHORIZATION_FAILED
    // is logged ("Tried to find group coordinator") and then thrown as KafkaJSGroupCoordinatorNotFound
    // without it. Each distinct logged error carrying a Kafka error code becomes one
    // {"event":"error","op":"log"}; KAFKAJS_DEBUG=1 prints the whole log on stderr as well.
    logLevel: a.saslMechanism || process.env.KAFKAJS_DEBUG ? logLevel.DEBUG : logLevel.NOTHING,
    logCreator: () => ({ namespace, level, log }) => {
      if (process.env.KAFKAJS_DEBUG) process.stderr.write(`${namespace} ${JSON.stringify(log)}\n`);
      // Only with SASL: other scenarios read "error" events as answers to their commands.
      const { code, type } = errorCode(log && log.error);
      if (!a.saslMechanism || code === null) return;
      const text = `${log.message}: ${type} (${code})`;
      if (loggedErrors.has(text) || loggedErrors.size >= 50) return;
      loggedErrors.add(text);
      emit({ event: 'error', op: 'log', error: text, code, type });
    },
    // SASL_PLAINTEXT with --sasl-mechanism (scram-sha-256 or plain, as KafkaJS names them).
    sasl: a.saslMechanism ? { mechanism: a.saslMechanism.toLowerCase(), username: a.saslUsername,
      password: a.saslPassword } : undefined,
    // TLS with --ssl-ca: the Kafka port's certificate must chain to it.
    ssl: a.sslCa ? { ca: [fs.readFileSync(a.sslCa, 'utf8')] } : undefined,
    // A reader retries by itself (readCommitted): KafkaJS's own backoff, doubling up to
    // maxRetryTime, would have it wait long after the group has a controller again.
    retry: a.readCommitted ? { initialRetryTime: 100, maxRetryTime: 500, retries: 1 }
      : { initialRetryTime: 200, retries: 8 },
  });
  if (a.readCommitted) process.exit(await readCommitted(kafka, a));
  await member(kafka, a);
}

main().catch((e) => {
  emit({ event: 'error', op: 'start', error: errorText(e), ...errorCode(e) });
  process.exit(1);
});
