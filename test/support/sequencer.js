// Orders test files for jest's workers: longest first, so no long file starts last and runs alone
// at the end (docs/benchmarks.md "CI's total time"). jest's own sequencer knows a file's duration
// only from its cache of earlier runs; on a fresh clone (CI) it has none and orders by file size,
// which put the two longest suites (small files of real-time work) at the very end. The durations
// below, measured in a whole run, stand in until the cache has the file's own.
const Sequencer = require('@jest/test-sequencer').default;
const { relative } = require('node:path');

/**
 * Seconds each long file took in a whole `npm test` run in band (docs/benchmarks.md "CI's total time";
 * the campaign and the simulated week from CI runs on a quiet machine, the rest on a busy one: only
 * their order matters here). Files under ~45 s need no entry: jest's size order places them well enough.
 */
const KNOWN_SECONDS = {
  'test/faults/campaign.test.ts': 300,
  'test/integration/simulate.test.ts': 130,
  'test/acceptance/calls.test.ts': 111,
  'test/acceptance/campaigns.test.ts': 103,
  'test/integration/warm-transfer-realtime.test.ts': 103,
  'test/infra/stack.test.ts': 100,
  'test/acceptance/rag.test.ts': 97,
  'test/faults/flows.test.ts': 95,
  'test/acceptance/web-call-browser.test.ts': 94,
  'test/integration/inbound-routing.test.ts': 92,
  'test/acceptance/webhooks.test.ts': 79,
  'test/acceptance/client-flows.test.ts': 77,
  'test/integration/warm-transfer.test.ts': 75,
  'test/acceptance/chats-openai.test.ts': 74,
  'test/acceptance/foundation.test.ts': 72,
  'test/acceptance/widget-browser.test.ts': 72,
  'test/integration/handoff.test.ts': 68,
  'test/acceptance/input-hardening.test.ts': 65,
  'test/acceptance/chats-streaming.test.ts': 63,
  'test/acceptance/openai-endpoint.test.ts': 62,
  'test/integration/web-calls.test.ts': 61,
  'test/acceptance/widget-chats.test.ts': 59,
  'test/acceptance/phone-numbers.test.ts': 55,
  'test/integration/handoff-realtime.test.ts': 53,
  'test/acceptance/agent-versions-tests.test.ts': 53,
  'test/acceptance/appointments.test.ts': 48,
};

class LongestFirstSequencer extends Sequencer {
  sort(tests) {
    const size = (test) => test.context.hasteFS.getSize(test.path) ?? 0;
    for (const test of tests) {
      test.duration = this.time(test) ?? KNOWN_SECONDS[relative(test.context.config.rootDir, test.path).split('\\').join('/')];
    }
    return tests.sort((a, b) => {
      const failedA = this.hasFailed(a);
      if (failedA !== this.hasFailed(b)) return failedA ? -1 : 1; // what failed last time first, as jest does
      const byDuration = (b.duration ?? 0) - (a.duration ?? 0);
      return byDuration !== 0 ? byDuration : size(b) - size(a);
    });
  }
}

module.exports = LongestFirstSequencer;
