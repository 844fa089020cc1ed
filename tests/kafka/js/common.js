// What tests/kafka/js/member.js and admin.js share: their JSON lines and
// how they name a KafkaJS error.
'use strict';

// One JSON line on standard output: what tests/kafka/driver.py reads.
function emit(fields) {
  process.stdout.write(JSON.stringify(fields) + '\n');
}

function errorText(e) {
  return `${e && e.name ? e.name : 'Error'}: ${e && e.message ? e.message : e}`;
}

// The Kafka error code and type of an error, looked for through KafkaJS's wrappers
// (a retry error keeps what it gave up on in originalError).
function errorCode(e) {
  for (let x = e, depth = 0; x && depth < 8; x = x.originalError || x.cause, depth++) {
    if (typeof x.code === 'number') return { code: x.code, type: x.type || null };
  }
  return { code: null, type: null };
}

module.exports = { emit, errorText, errorCode };
