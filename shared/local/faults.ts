import { ProvisionedThroughputExceededException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { LlmError, type LlmProviderName } from '../adapters/llm/port';
import { installBackoffScale, installFaultInjector, installModelFaultInjector, type FaultInjector } from '../fault-point';
import { seededRandom } from '../adapters/seeded-random';

/**
 * Faults on demand in the local runtime (`LOCAL_FAULTS`, docs/operations.md "Faults on demand"):
 * the local stand-ins fail as the real services can, at the rates asked, so code that is right only
 * where the stand-ins are kind fails here first. Each kind draws from its own generator seeded by
 * the seed and the kind's name, so a kind's sequence of draws is the same from run to run (which
 * request meets which draw still follows the order requests arrive in).
 */
export const FAULT_KINDS = {
  'dynamo.conflict': 'a transaction (or a lone write meeting one) cancelled with TransactionConflict: retryable, nothing written',
  'dynamo.throttle': 'ProvisionedThroughputExceededException: the SDK retries it with backoff, as against DynamoDB',
  'dynamo.unprocessed': 'BatchGetItem answers part of its keys as UnprocessedKeys (at least one answered when it asked for two or more)',
  's3.5xx': 'S3 answers 503 SlowDown: the SDK retries it, as against S3',
  'sqs.send': 'SendMessage fails after the SDK\'s own retries (the sender sees the error)',
  'sqs.redeliver': 'a message whose batch succeeded is delivered again after its visibility timeout (at-least-once delivery)',
  'lambda.recycle': 'a job batch\'s container is lost: the batch counts as failed and is delivered again, whatever the handler did',
  'model.429': 'the conversation model answers 429 (rate limited, Retry-After 1 s)',
  'model.5xx': 'the conversation model answers 500',
  'model.timeout': 'the conversation model does not answer in time',
  'model.malformed': 'the conversation model answers something that is not a chat completion (a malformed tool call)',
} as const;

export type FaultKind = keyof typeof FAULT_KINDS;

/** Rates used by `LOCAL_FAULTS=on`: high enough that a flow of a few hundred requests meets each kind. */
export const DEFAULT_RATES: Record<FaultKind, number> = {
  'dynamo.conflict': 0.02,
  'dynamo.throttle': 0.02,
  'dynamo.unprocessed': 0.2,
  's3.5xx': 0.05,
  'sqs.send': 0.01,
  'sqs.redeliver': 0.05,
  'lambda.recycle': 0.02,
  'model.429': 0.02,
  'model.5xx': 0.02,
  'model.timeout': 0.01,
  'model.malformed': 0.01,
};

export interface FaultPlan {
  seed: string;
  rates: Partial<Record<FaultKind, number>>;
  /**
   * `backoff=F` (0 to 1): the SDK's retry waits on the local clients multiplied by F (default 1,
   * the SDK's own). The same attempts on the same faults, less wall-clock time: for tests that
   * inject throttles at realistic rates (shared/fault-point.ts `localRetryStrategy`).
   */
  backoff?: number;
}

/**
 * Reads `LOCAL_FAULTS`: empty or `off` for none; `on` for DEFAULT_RATES; or a comma-separated list of
 * `kind=rate` (0 to 1), `seed=text` and `backoff=factor` (0 to 1), where `on` may start the list to override some rates.
 * Anything else is an error that names what is wrong.
 */
export function parseFaults(spec: string | undefined): FaultPlan | undefined {
  const text = spec?.trim();
  if (!text || text === 'off') return undefined;
  const plan: FaultPlan = { seed: '1', rates: {} };
  for (const part of text.split(',').map((p) => p.trim()).filter(Boolean)) {
    if (part === 'on') {
      plan.rates = { ...DEFAULT_RATES, ...plan.rates };
      continue;
    }
    const [name, value] = part.split('=').map((s) => s.trim());
    if (name === 'seed' && value) {
      plan.seed = value;
      continue;
    }
    if (name === 'backoff') {
      const factor = Number(value);
      if (!value || !Number.isFinite(factor) || factor < 0 || factor > 1) {
        throw new Error(`LOCAL_FAULTS: backoff (the scale of the SDK's retry waits) must be a number from 0 to 1, got "${value ?? ''}".`);
      }
      plan.backoff = factor;
      continue;
    }
    if (!name || !(name in FAULT_KINDS)) {
      throw new Error(`LOCAL_FAULTS: unknown fault "${name}"; the kinds are ${Object.keys(FAULT_KINDS).join(', ')} (or "on", "off", seed=…, backoff=…).`);
    }
    const rate = Number(value);
    if (value === undefined || value === '' || !Number.isFinite(rate) || rate < 0 || rate > 1) {
      throw new Error(`LOCAL_FAULTS: the rate of ${name} must be a number from 0 to 1, got "${value ?? ''}".`);
    }
    plan.rates[name as FaultKind] = rate;
  }
  return plan;
}

/** The faults of one process: draws, counts, and what each injection point asks. */
export class LocalFaults {
  private readonly draws = new Map<FaultKind, () => number>();
  private readonly counts = new Map<FaultKind, number>();

  constructor(readonly plan: FaultPlan) {}

  /** Whether this occasion of `kind` fails (counted when it does). */
  hit(kind: FaultKind): boolean {
    const rate = this.plan.rates[kind] ?? 0;
    if (rate <= 0) return false;
    let draw = this.draws.get(kind);
    if (!draw) this.draws.set(kind, (draw = seededRandom(`${this.plan.seed}:${kind}`)));
    if (draw() >= rate) return false;
    this.counts.set(kind, (this.counts.get(kind) ?? 0) + 1);
    return true;
  }

  /** Faults injected so far, by kind (kinds never hit are 0). */
  injected(): Record<FaultKind, number> {
    return Object.fromEntries(Object.keys(FAULT_KINDS).map((k) => [k, this.counts.get(k as FaultKind) ?? 0])) as Record<FaultKind, number>;
  }

  /** A line for the banner and logs. */
  describe(): string {
    const rates = Object.entries(this.plan.rates).filter(([, r]) => r! > 0).map(([k, r]) => `${k}=${r}`);
    const backoff = this.plan.backoff !== undefined && this.plan.backoff !== 1 ? `; SDK retry waits × ${this.plan.backoff}` : '';
    return rates.length ? `faults on (seed ${this.plan.seed}): ${rates.join(', ')}${backoff}` : 'faults: none';
  }

  /** The SDK-level injector (DynamoDB and S3 clients' fault points). */
  readonly injector: FaultInjector = async (service, commandName, args, next) => {
    const op = commandName.replace(/Command$/, '');
    if (service === 's3') {
      if (this.hit('s3.5xx')) throw serverError('SlowDown', 'Please reduce your request rate.', 503);
      return next(args);
    }
    if (this.hit('dynamo.throttle')) {
      throw new ProvisionedThroughputExceededException({ message: 'The level of configured provisioned throughput for the table was exceeded. (injected)', $metadata: { httpStatusCode: 400 } });
    }
    if (op === 'TransactWriteItems' && this.hit('dynamo.conflict')) {
      const items = (args.input.TransactItems ?? []) as unknown[];
      const clash = Math.floor(this.draw('dynamo.conflict') * Math.max(items.length, 1));
      throw new TransactionCanceledException({
        message: 'Transaction cancelled, please refer cancellation reasons for specific reasons [TransactionConflict] (injected)',
        $metadata: { httpStatusCode: 400 },
        CancellationReasons: items.map((_, i) => (i === clash ? { Code: 'TransactionConflict', Message: 'Transaction is ongoing for the item' } : { Code: 'None' })),
      });
    }
    if ((op === 'PutItem' || op === 'UpdateItem' || op === 'DeleteItem') && this.hit('dynamo.conflict')) {
      throw Object.assign(new Error('Transaction is ongoing for the item (injected)'), { name: 'TransactionConflictException', $fault: 'client', $metadata: { httpStatusCode: 400 } });
    }
    if (op === 'BatchGetItem') return this.batchGet(args, next);
    return next(args);
  };

  /** A second number from a kind's generator (where in a request the fault lands). */
  private draw(kind: FaultKind): number {
    return this.draws.get(kind)!();
  }

  /**
   * BatchGetItem with some keys answered as UnprocessedKeys, as DynamoDB under load. At this step
   * the request is already serialized (its keys are attribute values) and the answer already read
   * into plain values (the document client's view): the held keys' items are taken out of it and
   * the keys given back as plain values.
   */
  private async batchGet(args: { input: Record<string, any> }, next: Parameters<FaultInjector>[3]) {
    type Request = { Keys: Record<string, unknown>[] } & Record<string, unknown>;
    const requested = (args.input.RequestItems ?? {}) as Record<string, Request>;
    const total = Object.values(requested).reduce((n, r) => n + r.Keys.length, 0);
    if (!total || !this.hit('dynamo.unprocessed')) return next(args);
    const result = await next(args);
    // Hold back a share of the keys, answering at least one when there are two or more.
    let held = Math.min(total - (total > 1 ? 1 : 0), Math.max(1, Math.floor(this.draw('dynamo.unprocessed') * total)));
    const responses = { ...((result.output.Responses ?? {}) as Record<string, Record<string, unknown>[]>) };
    const unprocessed = { ...((result.output.UnprocessedKeys ?? {}) as Record<string, Request>) };
    for (const [table, request] of Object.entries(requested)) {
      if (held <= 0) break;
      const back = request.Keys.slice(Math.max(0, request.Keys.length - held)).map(plainKey);
      held -= back.length;
      const isHeld = (item: Record<string, unknown>) => back.some((key) => Object.entries(key).every(([name, value]) => item[name] === value));
      responses[table] = (responses[table] ?? []).filter((item) => !isHeld(item));
      const { Keys: _sent, ...rest } = request;
      unprocessed[table] = { ...rest, Keys: [...(unprocessed[table]?.Keys ?? []), ...back] };
    }
    return { ...result, output: { ...result.output, Responses: responses, UnprocessedKeys: unprocessed } };
  }
}

/** A key's attribute values (strings and numbers: the table's key types) as plain values. */
function plainKey(key: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(key).map(([name, value]) => {
    const v = value as { S?: string; N?: string };
    return [name, v.S ?? (v.N !== undefined ? Number(v.N) : value)];
  }));
}

/** The model's failures, as the adapters report them (shared/adapters/llm/port.ts). */
function modelInjector(faults: LocalFaults) {
  return (provider: string): Error | undefined => {
    const details = { provider: provider as LlmProviderName };
    if (faults.hit('model.429')) return new LlmError('rate_limited', 'The model is rate limited (injected)', { ...details, status: 429, retryAfterSeconds: 1 });
    if (faults.hit('model.5xx')) return new LlmError('provider_error', 'The model answered 500 (injected)', { ...details, status: 500 });
    if (faults.hit('model.timeout')) return new LlmError('timeout', 'The model did not answer in time (injected)', details);
    if (faults.hit('model.malformed')) return new LlmError('malformed', 'The model answered a tool call whose arguments are not JSON (injected)', details);
    return undefined;
  };
}

/** An AWS server error the SDK's retry strategy treats as transient (5xx). */
function serverError(name: string, message: string, status: number): Error {
  return Object.assign(new Error(`${message} (injected)`), { name, $fault: 'server', $metadata: { httpStatusCode: status } });
}

let current: LocalFaults | undefined;

/** Installs the plan for this process (undefined removes it); returns the installed faults. */
export function installLocalFaults(plan: FaultPlan | undefined): LocalFaults | undefined {
  current = plan ? new LocalFaults(plan) : undefined;
  installFaultInjector(current?.injector);
  installModelFaultInjector(current ? modelInjector(current) : undefined);
  installBackoffScale(current?.plan.backoff);
  return current;
}

/** The installed faults, if any. */
export function localFaults(): LocalFaults | undefined {
  return current;
}
