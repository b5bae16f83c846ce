import { checkLlm } from '../../access/enforce';
import { config } from '../../config';
import { modelFault } from '../../fault-point';
import type { LlmPort, LlmProviderName } from './port';
import { tracedModel } from '../../telemetry/genai';
import { prepareMetrics, recordModelError } from '../../telemetry/metrics';
import { LlmError } from './port';

export type * from './port';
export { LlmError };

let port: LlmPort | undefined;
let installed: LlmPort | undefined;

/** Each adapter's module, imported when its first request is made. */
const adapters: Record<LlmProviderName, () => Promise<LlmPort>> = {
  openai: () => import('./openai').then((m) => m.openAiModel()),
  local: () => import('./local').then((m) => m.localModel()),
};

/**
 * The configured adapter, loaded on the first request: its module (for `openai` zod and the
 * secret reader, for `local` the stand-in's text rules) stays off the chat functions' start
 * path, and a process that never asks the model never loads it.
 */
function lazyAdapter(name: LlmProviderName): LlmPort {
  let loading: Promise<LlmPort> | undefined;
  return {
    name,
    async complete(request) {
      // LOCAL_FAULTS: the model's 429, 5xx, timeouts and malformed answers, as the adapters report them.
      const fault = modelFault(name);
      if (fault) throw fault;
      const adapter = await (loading ??= adapters[name]().catch((err: unknown) => {
        loading = undefined; // a failed load is tried again by the next request
        throw err;
      }));
      return adapter.complete(request);
    },
  };
}

/**
 * This process's conversation model: LLM_PROVIDER `local` (the default) or `openai`
 * (shared/config.ts), or the one a test installed. Deployed, only functions that declare
 * `access.llm` may use it (the local runtime refuses the others, as IAM would the secret).
 */
export function llm(): LlmPort {
  checkLlm();
  if (installed) return counted(tracedModel(installed));
  // Traced per request (a GenAI client span when tracing is on, the request itself when off).
  return (port ??= counted(tracedModel(lazyAdapter(config().llm.provider === 'openai' ? 'openai' : 'local'))));
}

/**
 * Counts the model's failures by kind (the ModelErrors metric, shared/telemetry/metrics.ts). A
 * request its caller cancelled (an interruption, the turn's deadline) is not the model's failure.
 * A request is also when the metrics library loads, if it has not (a bundle leaves it out of the
 * cold start): its reply is recorded when the request is done.
 */
function counted(model: LlmPort): LlmPort {
  return {
    name: model.name,
    complete: (request) => {
      prepareMetrics().catch(() => undefined); // a failed load is tried again, and reported, by the flush
      return model.complete(request).catch((err: unknown) => {
        if (err instanceof LlmError && !err.details.cancelled) recordModelError(err.reason);
        throw err;
      });
    },
  };
}

/** Puts a model in place of the configured one (tests: a scripted model, or the real adapter with options); `undefined` restores the configured one. */
export function installLlm(model: LlmPort | undefined): void {
  installed = model;
}

/** Forgets the configured model (tests that change the environment); an installed one stays. */
export function resetLlm(): void {
  port = undefined;
}
