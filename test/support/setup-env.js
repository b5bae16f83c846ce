// Runs before every test file: quiet logs unless asked for (LOG_LEVEL=INFO npm test), no SDK Node-version warning.
process.env.LOG_LEVEL ??= 'SILENT';
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
// The platform metrics' EMF lines stay off stdout (a test that reads them installs a sink: shared/telemetry/metrics.ts).
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
// The integration run's stores (test/support/global-setup.ts): this worker's own table, bucket and secrets key.
if (process.env.VAP_TEST_STORES_PER_WORKER) {
  const worker = process.env.JEST_WORKER_ID || '1';
  process.env.TABLE_NAME = process.env.TABLE_NAME.replace(/-\d+$/, `-${worker}`);
  process.env.BUCKET_NAME = process.env.BUCKET_NAME.replace(/-\d+$/, `-${worker}`);
  process.env.SECRETS_LOCAL_KEY_FILE = process.env.SECRETS_LOCAL_KEY_FILE.replace(/-\d+\.key$/, `-${worker}.key`);
}
