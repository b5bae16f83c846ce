// Runs before every test file: quiet logs unless asked for (LOG_LEVEL=INFO npm test), no SDK Node-version warning.
process.env.LOG_LEVEL ??= 'SILENT';
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
