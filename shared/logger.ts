import { Logger } from '@aws-lambda-powertools/logger';

/**
 * The process logger: structured JSON through Powertools. Request bodies, headers and
 * secrets are never passed to it; middleware logs only method, route, status and timing.
 */
export const logger = new Logger({
  serviceName: process.env.POWERTOOLS_SERVICE_NAME ?? 'voice-agent-platform',
  logLevel: (process.env.LOG_LEVEL ?? process.env.POWERTOOLS_LOG_LEVEL ?? 'INFO') as 'INFO',
});
