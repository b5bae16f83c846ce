// @swc/jest compiles TypeScript and the ESM-only @middy packages to CommonJS (see ../shared/TOOLING.md).
const base = {
  transform: { '^.+\\.(t|j)sx?$|^.+\\.mjs$': ['@swc/jest', { jsc: { target: 'es2022' }, module: { type: 'commonjs' } }] },
  // linkedom (HTML extraction) requires these ESM-only packages; unpdf loads PDF.js with import(), and so
  // does the OTLP exporter its http transport (a dynamic import jest's CommonJS sandbox refuses).
  transformIgnorePatterns: ['/node_modules/(?!@middy/|uuid/|css-select/|css-what/|nth-check/|domhandler/|domutils/|entities/|dom-serializer/|domelementtype/|boolbase/|unpdf/|@opentelemetry/otlp-exporter-base/)'],
  moduleNameMapper: {
    '^@middy/([^/]+)$': '<rootDir>/node_modules/@middy/$1/index.js',
    // unpdf exports its PDF.js build for `import` only.
    '^unpdf/pdfjs$': '<rootDir>/node_modules/unpdf/dist/pdfjs.mjs',
    // The client (client/src) is ESM for Node: its relative imports name the emitted `.js` file.
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
  testEnvironment: 'node',
  setupFiles: ['<rootDir>/test/support/setup-env.js'],
};
module.exports = {
  projects: [
    { ...base, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.test.ts'] },
    { ...base, displayName: 'integration', testMatch: ['<rootDir>/test/integration/**/*.test.ts'],
      globalSetup: '<rootDir>/test/support/global-setup.ts', globalTeardown: '<rootDir>/test/support/global-teardown.ts' },
    { ...base, displayName: 'infra', testMatch: ['<rootDir>/test/infra/**/*.test.ts'] },
    // The fault tier: flows that matter, run under LOCAL_FAULTS, their invariants checked (docs/operations.md "Faults on demand").
    { ...base, displayName: 'faults', testMatch: ['<rootDir>/test/faults/**/*.test.ts'] },
    { ...base, displayName: 'acceptance', testMatch: ['<rootDir>/test/acceptance/**/*.test.ts'], setupFiles: [...base.setupFiles, '<rootDir>/test/support/setup-lazy.js'] },
    // The CI tier on the synthesized stack (issue 41): `cdk synth` once (global-setup), then each file runs the template (shared/local/stack/runner.ts).
    { ...base, displayName: 'stack', testMatch: ['<rootDir>/test/stack/**/*.test.ts'], globalSetup: '<rootDir>/test/stack/global-setup.ts' },
  ],
  testTimeout: 60000,
  // Two workers by default: CI has two cores. They were one for a while because the Realtime hand-off
  // suite (test/integration/handoff-realtime.test.ts) failed now and then beside another file; its
  // cause (the queue runner's stop racing a send) was fixed, and a fresh-clone run on two workers
  // passed whole (docs/benchmarks.md, "CI's total time"). JEST_WORKERS=1 runs in band. Each worker
  // has its own integration table. Longest files first (test/support/sequencer.js).
  maxWorkers: Number(process.env.JEST_WORKERS) || 2,
  testSequencer: '<rootDir>/test/support/sequencer.js',
  reporters: ['default', '<rootDir>/test/support/summary-reporter.js'],
};
