#!/usr/bin/env node
// KafkaJS's admin client against groupcoord's Kafka port, driven by
// tests/kafka/driver.py: one call per run, its result as one JSON line on
// standard output.
//
//   admin.js --bootstrap H:P[,H:P] list
//       {"op":"list","groups":[{"group_id":...,"protocol_type":...},...]}      admin.listGroups()
//   admin.js --bootstrap H:P describe GROUP...
//       {"op":"describe","groups":[{"group_id","error_code","state","protocol_type","protocol",
//         "members":[{"member_id","client_id","client_host","topics":[...],"assignment":{"T":[P,...]}}]}]}
//                                                                               admin.describeGroups()
//   admin.js --bootstrap H:P delete GROUP...
//       {"op":"delete","results":[{"group_id":...,"error_code":0},...]}        admin.deleteGroups()
//
// A member's subscribed topics and its assignment are its metadata and
// assignment bytes as KafkaJS's AssignerProtocol decodes them (the consumer
// protocol). When the call fails, the line is {"op":...,"error":"Name: message",
// "name":...,"code":N|null,"type":...|null} and the exit code is 2; a failed
// deleteGroups (KafkaJSDeleteGroupsError) adds "groups":[{"group_id","error_code","type"}],
// the groups refused and the Kafka error of each. Exit code 1: bad options.
//
// --request-timeout-ms bounds each request, --retries KafkaJS's retries of a
// failed call. KAFKAJS_DEBUG=1 prints KafkaJS's log on standard error.
'use strict';

const { Kafka, AssignerProtocol, logLevel } = require('kafkajs');
const { emit, errorText, errorCode } = require('./common');

function parseArgs(argv) {
  const a = { bootstrap: '', clientId: 'kafkajs-admin', requestTimeoutMs: 30000, retries: 1, op: '', groups: [] };
  const names = {
    '--bootstrap': 'bootstrap', '--client-id': 'clientId', '--request-timeout-ms': 'requestTimeoutMs',
    '--retries': 'retries',
  };
  let i = 0;
  for (; i < argv.length && argv[i].startsWith('--'); i++) {
    const key = names[argv[i]];
    if (!key || i + 1 >= argv.length) throw new Error(`unknown or incomplete option ${argv[i]}`);
    const v = argv[++i];
    a[key] = typeof a[key] === 'number' ? Number(v) : v;
  }
  a.op = argv[i] || '';
  a.groups = argv.slice(i + 1);
  if (!a.bootstrap) throw new Error('--bootstrap is required');
  if (a.op === 'list' ? a.groups.length !== 0 : !['describe', 'delete'].includes(a.op) || a.groups.length === 0) {
    throw new Error('usage: admin.js --bootstrap H:P [options] list | describe GROUP... | delete GROUP...');
  }
  return a;
}

// A member's metadata or assignment bytes, decoded; what does not decode is kept as hex.
function decoded(decode, bytes) {
  if (!bytes || bytes.length === 0) return null;
  try {
    return decode(bytes);
  } catch (e) {
    return { undecodable: Buffer.from(bytes).toString('hex'), error: errorText(e) };
  }
}

function describedMember(m) {
  const metadata = decoded((b) => AssignerProtocol.MemberMetadata.decode(b), m.memberMetadata);
  const assignment = decoded((b) => AssignerProtocol.MemberAssignment.decode(b), m.memberAssignment);
  const partitions = {};
  for (const [topic, ps] of Object.entries((assignment && assignment.assignment) || {})) {
    partitions[topic] = [...ps].sort((x, y) => x - y);
  }
  return {
    member_id: m.memberId, client_id: m.clientId, client_host: m.clientHost,
    topics: metadata && metadata.topics ? metadata.topics : metadata, assignment: assignment && assignment.assignment
      ? partitions : assignment,
  };
}

async function call(admin, a) {
  if (a.op === 'list') {
    const { groups } = await admin.listGroups();
    return { groups: groups.map((g) => ({ group_id: g.groupId, protocol_type: g.protocolType })) };
  }
  if (a.op === 'describe') {
    const { groups } = await admin.describeGroups(a.groups);
    return {
      groups: groups.map((g) => ({
        group_id: g.groupId, error_code: g.errorCode, state: g.state, protocol_type: g.protocolType,
        protocol: g.protocol, members: g.members.map(describedMember),
      })),
    };
  }
  const results = await admin.deleteGroups(a.groups);
  return { results: results.map((r) => ({ group_id: r.groupId, error_code: r.errorCode })) };
}

async function main() {
  let a;
  try {
    a = parseArgs(process.argv.slice(2));
  } catch (e) {
    process.stderr.write(`${e.message}\n`);
    return 1;
  }
  const kafka = new Kafka({
    clientId: a.clientId,
    brokers: a.bootstrap.split(','),
    requestTimeout: a.requestTimeoutMs,
    retry: { initialRetryTime: 200, retries: a.retries },
    logLevel: process.env.KAFKAJS_DEBUG ? logLevel.DEBUG : logLevel.NOTHING,
    logCreator: () => ({ namespace, log }) => {
      if (process.env.KAFKAJS_DEBUG) process.stderr.write(`${namespace} ${JSON.stringify(log)}\n`);
    },
  });
  const admin = kafka.admin();
  let code = 0;
  try {
    await admin.connect();
    emit({ op: a.op, ...(await call(admin, a)) });
  } catch (e) {
    const out = { op: a.op, error: errorText(e), name: (e && e.name) || null, ...errorCode(e) };
    if (e && Array.isArray(e.groups)) {
      out.groups = e.groups.map((g) => ({
        group_id: g.groupId, error_code: g.errorCode, type: (g.error && g.error.type) || null,
      }));
    }
    emit(out);
    code = 2;
  }
  await admin.disconnect().catch(() => {});
  return code;
}

main().then((code) => process.exit(code), (e) => {
  emit({ op: null, error: errorText(e), name: (e && e.name) || null, ...errorCode(e) });
  process.exit(2);
});
