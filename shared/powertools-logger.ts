import { Logger } from '@aws-lambda-powertools/logger';

/** The Powertools Logger behind shared/logger.ts, which loads this module beside a function's start (see there). */
export const powertoolsLogger = new Logger({
  serviceName: process.env.POWERTOOLS_SERVICE_NAME ?? 'voice-agent-platform',
  logLevel: (process.env.LOG_LEVEL ?? process.env.POWERTOOLS_LOG_LEVEL ?? 'INFO') as 'INFO',
});
