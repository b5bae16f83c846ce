import * as logs from 'aws-cdk-lib/aws-logs';
import type { ModelProviderProps } from './model-provider';
import type { VoiceAgentPlatformStackProps } from './stack';

/** What `bin/app.ts` reads from the CLI's environment: every deploy setting (docs/operations.md, "Deploy"). */
export type DeploySettings = Pick<
  VoiceAgentPlatformStackProps,
  | 'alarmEmail'
  | 'telephony'
  | 'publicBaseUrl'
  | 'sourceMaps'
  | 'voiceRuntimeUrl'
  | 'voiceDomainName'
  | 'voiceCertificateArn'
  | 'voiceMinTasks'
  | 'voiceMaxTasks'
  | 'realtimeBaseUrl'
  | 'analysis'
  | 'llm'
  | 'throttle'
  | 'rateLimitPerMinute'
  | 'concurrencyCeiling'
  | 'logRetention'
  | 'reservedConcurrency'
  | 'traces'
>;

type Env = Record<string, string | undefined>;

/** The retention periods CloudWatch Logs accepts (PutRetentionPolicy), in days. */
export const LOG_RETENTION_DAYS = Object.values(logs.RetentionDays).filter((d): d is number => typeof d === 'number' && d !== logs.RetentionDays.INFINITE);

/** A deploy setting the CLI's environment gave a value it cannot take: the message names the variable. */
export class DeploySettingError extends Error {
  constructor(variable: string, value: string, expected: string) {
    super(`${variable}=${JSON.stringify(value)} is not valid: expected ${expected} (docs/operations.md, "Deploy").`);
    this.name = 'DeploySettingError';
  }
}

/**
 * The stack's props from the environment the CLI runs in. Unset (or empty) variables keep the
 * stack's defaults; a value that cannot be right (a typo in a provider, a retention CloudWatch
 * refuses, a rate that is not a number) fails the synth with a message naming the variable, never
 * a silent fallback to a default.
 */
export function deploySettingsFrom(env: Env): DeploySettings {
  const read = reader(env);
  const settings: DeploySettings = {
    alarmEmail: read.text('ALARM_EMAIL'),
    // The carrier: its credentials in Secrets Manager (a secret the stack creates, or an existing one by name).
    telephony: { provider: read.oneOf('TELEPHONY_PROVIDER', ['simulated', 'twilio'] as const), twilioSecretName: read.text('TWILIO_SECRET_NAME') },
    publicBaseUrl: read.url('PUBLIC_BASE_URL', ['https:', 'http:']),
    sourceMaps: read.bool('SOURCE_MAPS'),
    traces: read.bool('TRACES'),
    voiceRuntimeUrl: read.url('VOICE_RUNTIME_URL', ['wss:', 'ws:']),
    voiceDomainName: read.text('VOICE_DOMAIN_NAME'),
    voiceCertificateArn: read.text('VOICE_CERTIFICATE_ARN'),
    voiceMinTasks: read.int('VOICE_MIN_TASKS', 1, 100),
    voiceMaxTasks: read.int('VOICE_MAX_TASKS', 1, 1000),
    realtimeBaseUrl: read.url('REALTIME_BASE_URL', ['wss:', 'ws:', 'https:', 'http:']),
    analysis: modelProvider(read, 'ANALYSIS'),
    llm: modelProvider(read, 'LLM'),
    throttle: read.throttle(),
    rateLimitPerMinute: read.int('RATE_LIMIT_PER_MINUTE', 1, 1_000_000),
    concurrencyCeiling: read.int('CONCURRENCY_CEILING', 1, 100_000),
    logRetention: read.retention('LOG_RETENTION_DAYS'),
    reservedConcurrency: { widget: read.concurrency('WIDGET_CONCURRENCY'), model: read.concurrency('MODEL_CONCURRENCY') },
  };
  if (!!settings.voiceDomainName !== !!settings.voiceCertificateArn) {
    const missing = settings.voiceDomainName ? 'VOICE_CERTIFICATE_ARN' : 'VOICE_DOMAIN_NAME';
    throw new DeploySettingError(missing, '', 'VOICE_DOMAIN_NAME and VOICE_CERTIFICATE_ARN set together (the certificate must cover the domain)');
  }
  if (settings.voiceMinTasks && settings.voiceMaxTasks && settings.voiceMaxTasks < settings.voiceMinTasks) {
    throw new DeploySettingError('VOICE_MAX_TASKS', String(settings.voiceMaxTasks), `at least VOICE_MIN_TASKS (${settings.voiceMinTasks})`);
  }
  return settings;
}

function modelProvider(read: ReturnType<typeof reader>, prefix: 'LLM' | 'ANALYSIS'): ModelProviderProps {
  return {
    provider: read.oneOf(`${prefix}_PROVIDER`, ['local', 'openai'] as const),
    baseUrl: read.url(`${prefix}_BASE_URL`, ['https:', 'http:']),
    defaultModel: read.text(`${prefix}_MODEL`),
    timeoutMs: read.int(`${prefix}_TIMEOUT_MS`, 100, 600_000),
    secretName: read.text(`${prefix}_SECRET_NAME`),
  };
}

function reader(env: Env) {
  const raw = (name: string): string | undefined => {
    const value = env[name]?.trim();
    return value ? value : undefined;
  };
  const int = (name: string, min: number, max: number): number | undefined => {
    const value = raw(name);
    if (value === undefined) return undefined;
    const n = Number(value);
    if (!/^\d+$/.test(value) || n < min || n > max) throw new DeploySettingError(name, value, `a whole number from ${min} to ${max}`);
    return n;
  };
  return {
    text: raw,
    int,
    bool(name: string): boolean | undefined {
      const value = raw(name);
      if (value === undefined) return undefined;
      if (value !== 'true' && value !== 'false') throw new DeploySettingError(name, value, 'true or false');
      return value === 'true';
    },
    oneOf<T extends string>(name: string, allowed: readonly T[]): T | undefined {
      const value = raw(name);
      if (value === undefined) return undefined;
      if (!(allowed as readonly string[]).includes(value)) throw new DeploySettingError(name, value, `one of ${allowed.join(', ')}`);
      return value as T;
    },
    url(name: string, protocols: string[]): string | undefined {
      const value = raw(name);
      if (value === undefined) return undefined;
      let protocol: string | undefined;
      try {
        protocol = new URL(value).protocol;
      } catch {
        protocol = undefined;
      }
      if (!protocol || !protocols.includes(protocol)) throw new DeploySettingError(name, value, `a ${protocols.map((p) => `${p}//`).join(' or ')} URL`);
      return value;
    },
    retention(name: string): logs.RetentionDays | undefined {
      const value = raw(name);
      if (value === undefined) return undefined;
      if (!LOG_RETENTION_DAYS.includes(Number(value)) || !/^\d+$/.test(value)) throw new DeploySettingError(name, value, `one of CloudWatch Logs' retention periods in days (${LOG_RETENTION_DAYS.join(', ')})`);
      return Number(value) as logs.RetentionDays;
    },
    /** API_THROTTLE_RATE and API_THROTTLE_BURST: set together or not at all (each default is only sensible with the other). */
    throttle(): VoiceAgentPlatformStackProps['throttle'] {
      const rateLimit = int('API_THROTTLE_RATE', 1, 10_000);
      const burstLimit = int('API_THROTTLE_BURST', 1, 5_000);
      if (rateLimit === undefined && burstLimit === undefined) return undefined;
      if (rateLimit === undefined || burstLimit === undefined) {
        const missing = rateLimit === undefined ? 'API_THROTTLE_RATE' : 'API_THROTTLE_BURST';
        throw new DeploySettingError(missing, '', 'API_THROTTLE_RATE and API_THROTTLE_BURST set together');
      }
      return { rateLimit, burstLimit };
    },
    /** A reserved-concurrency cap per function: a whole number, or `off` for none (accounts whose concurrency limit is too small to reserve any). */
    concurrency(name: string): number | 'off' | undefined {
      const value = raw(name);
      if (value === undefined || value === 'off') return value;
      if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > 1000) throw new DeploySettingError(name, value, 'a whole number from 1 to 1000, or off');
      return Number(value);
    },
  };
}
